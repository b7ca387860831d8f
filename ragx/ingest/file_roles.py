"""The role a file plays in a code repository, from its path alone: source, test, example, doc or other.

Scoring weighs a candidate by its file's role (ragx/scoring/score.py `role_prior`) where source code is
among the candidates, so a test that calls a function, or a README that quotes the question, does not
outrank the code that answers it. Configuration and data files are "other" and never weighed.
"""

from __future__ import annotations

import functools
import posixpath

import numpy as np

from ..scoring.candidates import ROLE_DOC as DOC
from ..scoring.candidates import ROLE_EXAMPLE as EXAMPLE
from ..scoring.candidates import ROLE_OTHER as OTHER
from ..scoring.candidates import ROLE_SOURCE as SOURCE
from ..scoring.candidates import ROLE_TEST as TEST
from .filetypes import CODE, DOCUMENT_EXTENSIONS, EXTENSION_KINDS, NAME_KINDS

_TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "test_data", "testdata"})
_EXAMPLE_DIRS = frozenset({"example", "examples", "demo", "demos", "sample", "samples", "tutorial", "tutorials"})
_DOC_DIRS = frozenset({"doc", "docs", "documentation", "man"})
_CONFIG_EXTS = frozenset({"toml", "yaml", "yml", "ini", "cfg", "conf", "properties"})


def _is_test_name(name: str) -> bool:
    stem = name.rsplit(".", 1)[0].lower()
    return (stem.startswith("test_") or stem.endswith(("_test", "_tests", ".test", ".spec")) or stem in ("conftest", "tests"))


@functools.lru_cache(maxsize=1 << 16)
def role_of(path: str) -> int:
    """A file's role from its POSIX path relative to the corpus root (one of SOURCE ... DOC)."""
    folders = [part.lower() for part in path.split("/")[:-1]]
    name = posixpath.basename(path)
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    code = EXTENSION_KINDS.get(ext) == CODE and ext not in _CONFIG_EXTS
    if code and (_is_test_name(name) or _TEST_DIRS.intersection(folders)):
        return TEST
    if _EXAMPLE_DIRS.intersection(folders):
        return EXAMPLE
    if ext in DOCUMENT_EXTENSIONS or (not ext and name.lower() in NAME_KINDS) or _DOC_DIRS.intersection(folders):
        return DOC
    return SOURCE if code else OTHER


def roles(paths: list[str]) -> np.ndarray:
    """`role_of` each path, as int8."""
    return np.fromiter((role_of(p) for p in paths), dtype=np.int8, count=len(paths))
