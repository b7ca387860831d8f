"""Result documents of a query: chunks or files, built from a Ranking and the store's rows.

Builders take only what they read (the store, the candidates, the ranking, the params and the
options), never the Searcher. Rows are fetched with `Store.chunk_rows`, which refuses to leave a
missing id out: a result can never be labelled with the row of a neighbouring chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import FULL_RUN, CorruptIndexError
from ..index.store import Store, chunk_location
from ..scoring.candidates import Candidates
from ..scoring.explain import explain_path
from ..scoring.files import rank_files
from ..scoring.params import Params
from ..scoring.score import Ranking
from .evidence import Verdict
from .filters import Filters

TEXT_CHARS = 600  # result text is cut here (with "truncated": true); byte ranges locate the whole chunk


@dataclass
class QueryOptions:
    files_only: bool = False
    explain: bool = False
    expand: bool = True
    text_chars: int = TEXT_CHARS
    filters: Filters = Filters()  # --tag / --path
    # False (--no-evidence-check): a query the evidence rule finds nothing relevant for still gets its
    # best results; the `evidence` key says the rule was not enforced.
    enforce_evidence: bool = True


def finite(value: float, what: str) -> float:
    """A float for JSON; NaN or infinity means damaged vectors, never a number to print."""
    if not np.isfinite(value):
        raise CorruptIndexError(f"index holds non-finite {what} values (damaged vectors): {FULL_RUN}")
    return float(value)


def _breakdown(c: Candidates, r: Ranking, node: int) -> dict[str, Any]:
    rr = c.rerank[node]
    return {
        "dense": finite(c.qsim[node], "similarity"),
        "lexical": float(c.lexical[node]),
        "fused": float(r.fused[node]),
        "heat": finite(r.trace.heat[node], "heat"),
        "rerank": None if np.isnan(rr) else float(rr),
        # what notes linking to this chunk's file say: best anchor cosine (None: nobody links to it) and
        # BM25 over its anchor document
        "anchor_dense": None if np.isnan(c.anchor_sim[node]) else float(c.anchor_sim[node]),
        "anchor_lexical": float(c.anchor_lexical[node]),
    }


def chunks_document(store: Store, c: Candidates, r: Ranking, p: Params, o: QueryOptions) -> dict[str, Any]:
    top = r.order[: p.top]
    rows = store.chunk_rows(c.nodes[top])
    results = []
    for rank, (node, row) in enumerate(zip(top.tolist(), rows), start=1):
        text = row["text"]
        item = {
            "rank": rank,
            **chunk_location(row),
            "score": finite(r.score[node], "score"),
            "hop": int(r.trace.hop[node]),
            "breakdown": _breakdown(c, r, node),
            "text": text[: o.text_chars],
            "truncated": len(text) > o.text_chars,
        }
        if o.explain:
            item["path"] = explain_path(c, p, r.trace, node)
        results.append(item)
    return {"results": results, "candidates": int(len(r.order))}


def files_document(store: Store, c: Candidates, r: Ranking, p: Params, o: QueryOptions) -> dict[str, Any]:
    file_ids, sums = rank_files(c, r, p)
    file_ids, sums = file_ids[: p.top], sums[: p.top]
    # Each shown file's chunks among the candidates, best first.
    in_order = c.file_ids[r.order]
    chunks_of = {int(f): c.nodes[r.order[in_order == f]].tolist() for f in file_ids.tolist()}
    best = store.chunk_rows([ids[0] for ids in chunks_of.values()])
    results = []
    for rank, (f, total, row) in enumerate(zip(file_ids.tolist(), sums.tolist(), best), start=1):
        item = {
            "rank": rank,
            "file": row["path"],
            "score": finite(total, "score"),
            "chunk_ids": chunks_of[f],
            "best_chunk": {"chunk_id": row["id"], "line_start": row["line_start"], "line_end": row["line_end"]},
        }
        if o.explain:
            node = int(c.local(np.array([row["id"]]))[0])
            item["path"] = explain_path(c, p, r.trace, node)
        results.append(item)
    return {"results": results, "candidates": int(len(r.order))}


def describe_evidence(c: Candidates, verdict: Verdict, options: QueryOptions) -> dict[str, Any]:
    """The `evidence` key (the three signals and their thresholds, the reason when nothing is relevant, whether
    the rule was enforced) and, with --tag / --path, the `filters` key; a filter no indexed file passes
    says so."""
    filters = options.filters
    out: dict[str, Any] = {"evidence": {**verdict.describe(), "enforced": options.enforce_evidence}}
    if filters.active:
        out["filters"] = filters.describe()
        if len(c.nodes) == 0 and verdict.dense == 0 and verdict.lexical == 0:
            out["evidence"]["reason"] = "no indexed file passes the filters (--tag / --path)"
        elif not verdict.match:  # judged on the files the filters allow, not on the whole corpus
            out["evidence"]["reason"] += " among the files the filters allow"
    return out
