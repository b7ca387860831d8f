"""Figures by query type: a query set that names each query's kind ("type": paraphrase, keyword,
linked, ...) gets every configuration's means per kind, so a stage that serves one kind (link edges
for `linked` questions) is seen where it acts rather than diluted in the overall mean."""

from __future__ import annotations

import statistics
from typing import Any

from .metrics import METRIC_NAMES


def by_kind(per_query: dict[str, dict[str, dict[str, float]]], kinds: dict[str, str]) -> dict[str, dict[str, Any]]:
    """{kind: {"n": queries, "means": {config: {metric: mean}}}} from per-query file metrics
    ({config: {qid: {metric: value}}}); {} when no query names a kind."""
    groups: dict[str, list[str]] = {}
    for qid, kind in kinds.items():
        if kind:
            groups.setdefault(kind, []).append(qid)
    out: dict[str, dict[str, Any]] = {}
    for kind in sorted(groups):
        qids = groups[kind]
        means = {name: {m: statistics.fmean(rows[q][m] for q in qids) for m in METRIC_NAMES}
                 for name, rows in per_query.items() if all(q in rows for q in qids)}
        out[kind] = {"n": len(qids), "means": means}
    return out


def kind_rows(doc: dict[str, Any], metric: str) -> tuple[list[str], list[list[str]]]:
    """(head, rows): config × kind for one metric; empty rows when the set names no kinds."""
    kinds = doc.get("by_type") or {}
    names = list(doc["files"]["means"])
    head = ["config", *(f"{k} ({v['n']})" for k, v in kinds.items())]
    rows = [[n, *(f"{v['means'][n][metric]:.4f}" if n in v["means"] else "—" for v in kinds.values())] for n in names] if kinds else []
    return head, rows
