"""The scripts under research/ are named by date (`2026-12-01-file-bm25.py`), so they cannot be imported
by name; a study that builds on another's passes and helpers loads it with `load_script`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

RESEARCH = Path(__file__).resolve().parents[2] / "research"


def load_script(file: str) -> ModuleType:
    """research/<file> as a module, executed once per process (two studies loading it share it)."""
    name = "research_" + Path(file).stem.replace("-", "_")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, RESEARCH / file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
