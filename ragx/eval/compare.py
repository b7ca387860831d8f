"""Significance of every configuration against a named reference, on one dataset's eval document.

Adds to the document:
    "comparisons": {"reference", "method", "configs": {config: {metric: Comparison}}}
    "lexical_check": {"leg", "reference", "metrics": {metric: Comparison}}  (bm25 against bm25-ref)
Each family (one metric across configurations; the lexical check across metrics) is corrected with
Benjamini-Hochberg.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UsageError
from .metrics import METRIC_NAMES
from .presets import DEFAULT_REFERENCE, REFERENCE_BM25
from .stats import METHOD, Comparison, correct, paired

LEXICAL_LEG = "bm25"   # ragx's own lexical leg, checked against the reference BM25


def pick_reference(names: list[str], wanted: str | None) -> str:
    """`--reference NAME`, else the plain hybrid when the run has one, else the first configuration."""
    if wanted is not None:
        if wanted not in names:
            raise UsageError(f"--reference {wanted!r} is not one of this run's configurations ({', '.join(names)})")
        return wanted
    return DEFAULT_REFERENCE if DEFAULT_REFERENCE in names else names[0]


def vectors(per_query: dict[str, dict[str, float]], qids: list[str], metric: str) -> np.ndarray:
    return np.array([per_query[q][metric] for q in qids], dtype=np.float64)


def compare_all(per_query: dict[str, dict[str, dict[str, float]]], reference: str,
                metrics: tuple[str, ...] = METRIC_NAMES) -> dict[str, dict[str, Comparison]]:
    """{config: {metric: Comparison}} for every config but the reference, corrected per metric."""
    qids = list(per_query[reference])
    out: dict[str, dict[str, Comparison]] = {name: {} for name in per_query if name != reference}
    for metric in metrics:
        ref = vectors(per_query[reference], qids, metric)
        family = []
        for name in out:
            out[name][metric] = paired(vectors(per_query[name], qids, metric), ref)
            family.append(out[name][metric])
        correct(family)
    return out


def lexical_check(per_query: dict[str, dict[str, dict[str, float]]], metrics: tuple[str, ...] = METRIC_NAMES) -> dict[str, Comparison] | None:
    """ragx's lexical leg against the reference BM25, one family across metrics; None without both."""
    if LEXICAL_LEG not in per_query or REFERENCE_BM25 not in per_query:
        return None
    qids = list(per_query[REFERENCE_BM25])
    out = {m: paired(vectors(per_query[LEXICAL_LEG], qids, m), vectors(per_query[REFERENCE_BM25], qids, m)) for m in metrics}
    correct(list(out.values()))
    return out


def add_comparisons(doc: dict[str, Any], reference: str | None) -> dict[str, Any]:
    """Fill "comparisons" and "lexical_check" on a per-dataset eval document (file level)."""
    per_query = doc["files"]["per_query"]
    metrics = tuple(doc.get("metrics") or METRIC_NAMES)
    ref = pick_reference(list(per_query), reference)
    configs = compare_all(per_query, ref, metrics)
    doc["comparisons"] = {
        "reference": ref,
        "method": METHOD,
        "configs": {name: {m: c.to_json() for m, c in ms.items()} for name, ms in configs.items()},
    }
    check = lexical_check(per_query, metrics)
    doc["lexical_check"] = None if check is None else {
        "leg": LEXICAL_LEG, "reference": REFERENCE_BM25, "metrics": {m: c.to_json() for m, c in check.items()},
    }
    return doc
