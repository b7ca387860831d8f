"""The ground floor stays a ground floor: scoring imports numpy only, caches keep or refuse every
Candidates field, and `covers` is the one caps rule."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from ragx.config import load_settings
from ragx.scoring.candidates import CACHE_COLUMNS, CACHED_APART, NOT_CACHED, Candidates, PassCaps

SCORING = Path(__file__).resolve().parent.parent / "ragx" / "scoring"


def test_scoring_imports_nothing_but_numpy_and_itself():
    for path in SCORING.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
            else:
                continue
            assert all(n.split(".")[0] in ("numpy", "__future__", "dataclasses", "typing", "math") for n in names), (path.name, names)


def test_every_candidates_field_is_cached_or_said_not_to_be():
    fields = {f.name for f in dataclasses.fields(Candidates)}
    assert fields == set(CACHE_COLUMNS) | set(CACHED_APART) | set(NOT_CACHED)


def test_caps_cover_what_params_need():
    p = load_settings(None).search
    caps = p.caps()
    assert caps.covers(caps)
    assert PassCaps(caps.dense_n + 5, caps.lexical_n, caps.hops + 1, caps.query_floor - 0.1).covers(caps)
    assert not PassCaps(caps.dense_n - 1, caps.lexical_n, caps.hops, caps.query_floor).covers(caps)
    assert not PassCaps(caps.dense_n, caps.lexical_n, caps.hops, caps.query_floor + 0.01).covers(caps)
    wide = PassCaps.widest([caps, p.replace(hops=3, query_floor=0.0).caps()])
    assert wide.hops == 3 and wide.query_floor == 0.0 and wide.covers(caps)
