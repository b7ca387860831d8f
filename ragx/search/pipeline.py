"""A query end to end: pass -> (shortlist -> rerank) -> score -> result documents.

`Searcher` keeps the store connection, the index arrays and the models warm between queries (the MCP
server and `ragx eval` reuse one), and reloads the arrays when a new index generation is committed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import ManifestMismatchError, NoIndexError, UsageError
from ..index.layout import Layout
from ..index.snapshot import Snapshot
from ..index.store import Store, chunk_location
from .candidates import Candidates, PassCaps
from .evidence import judge
from .explain import explain_path
from .filters import Filters, allowed_files, allowed_rows
from .link_edges import file_link_pairs
from .params import Params
from .retrieve import retrieval_pass
from .score import Ranking, rank_files, score, shortlist

TEXT_CHARS = 600  # result text is cut here (with "truncated": true); byte ranges locate the whole chunk


@dataclass
class QueryOptions:
    files_only: bool = False
    explain: bool = False
    expand: bool = True
    text_chars: int = TEXT_CHARS
    filters: Filters = Filters()  # [ranking] --tag / --path


class Searcher:
    def __init__(
        self,
        layout: Layout,
        embedder_factory: Callable[[], Any],
        reranker_factory: Callable[[], Any] | None = None,
        expander_factory: Callable[[], Any] | None = None,
    ):
        self.layout = layout
        self.store = Store(layout.db, readonly=True)
        self._embedder_factory = embedder_factory
        self._embedder = None
        self._reranker_factory = reranker_factory
        self._expander_factory = expander_factory  # LLM query expansion (ragx/models/expand.py), None = off
        self._generation: int | None = None
        self.snapshot: Snapshot | None = None
        self.manifest: dict = {}

    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        return self._embedder

    def refresh(self) -> None:
        """Pick up the newest committed generation (cheap when nothing changed)."""
        with self.store.snapshot():
            manifest = self.store.manifest()
        generation = manifest.get("generation")
        if generation is None:
            raise NoIndexError(f"no finished index run in {self.layout.root}: run `ragx index`")
        if generation != self._generation:
            self.snapshot = Snapshot.load(self.layout.gen(int(generation)))
            self._generation = generation
            self.manifest = manifest

    def check_model(self) -> None:
        built_with = self.manifest.get("embedder")
        if built_with != self.embedder.name:
            raise ManifestMismatchError(
                f"index was built with embedder {built_with}, config now says {self.embedder.name}: run `ragx index --full`"
            )

    def candidates(self, query: str, params: Params, *, expand: bool = True, filters: Filters = Filters()) -> Candidates:
        caps = PassCaps(params.dense_n, params.lexical_n, params.hops, params.query_floor)
        return self.pass_with_caps(query, caps, expand=expand, filters=filters)

    def pass_with_caps(self, query: str, caps: PassCaps, *, expand: bool = True, filters: Filters = Filters()) -> Candidates:
        """The retrieval pass under explicit caps (eval and the lab ask for the widest any config needs)."""
        if not query.strip():
            raise UsageError("empty query")
        self.refresh()
        self.check_model()
        variants = [query]
        qvecs = self.embedder.embed_query(query)[None, :]
        note = None
        if self._expander_factory is not None:
            if expand:  # each reformulation (and the HyDE passage) adds a dense leg to the fusion
                from ..models.expand import expansion_legs
                from ..models.registry import warn_once

                texts, vecs, note = expansion_legs(self._expander_factory, self.embedder, query, warn_once)
                if texts:
                    variants += texts
                    qvecs = np.vstack([qvecs, vecs])
            else:
                note = {"used": False, "skipped": "turned off for this query (--no-expand)"}
        allowed = allowed_rows(self.snapshot.file_ids, allowed_files(self.store.db, filters)) if filters.active else None
        c = retrieval_pass(query, qvecs, variants, self.snapshot, self.store.db, caps, allowed)
        c.link_pairs = file_link_pairs(self.store.db, c.file_ids)  # [ranking] explicit-link edges
        if note is not None:
            c.notes["expand"] = note
        return c

    def rerank(self, c: Candidates, params: Params) -> None:
        """Fill rerank scores for the shortlist, when a reranker is configured and weighted."""
        if self._reranker_factory is None:
            return
        if params.alpha <= 0:
            c.notes["rerank"] = {"skipped": "turned off (--no-rerank or search.alpha = 0)"}
            return
        from ..errors import ProviderError
        from ..models.registry import warn_once

        picked = shortlist(c, params)
        reranker = None
        try:
            reranker = self._reranker_factory()
            rows = self.store.chunks(c.nodes[picked], ("id", "text"))
            scores = reranker.score(c.query, [r["text"] for r in rows])
        except ProviderError as exc:  # the model cannot load or score: answer without it, say why once
            c.rerank_model = getattr(reranker, "name", None)
            c.notes["rerank"] = {"skipped": str(exc)}
            warn_once(f"rerank:{exc}", f"rerank skipped: {exc}")
            return
        c.rerank[picked] = scores
        c.rerank_model = getattr(reranker, "name", None)

    def search(self, query: str, params: Params, options: QueryOptions) -> dict[str, Any]:
        c = self.candidates(query, params, expand=options.expand, filters=options.filters)
        verdict = judge(c, params)  # [ranking] an absolute test: is anything here relevant at all?
        if not verdict.match:
            c = _emptied(c)
        self.rerank(c, params)
        ranking = score(c, params)
        doc = files_document(self, c, ranking, params, options) if options.files_only else chunks_document(self, c, ranking, params, options)
        doc["evidence"] = verdict.describe()
        if options.filters.active:
            doc["filters"] = options.filters.describe()
            if len(c.nodes) == 0 and verdict.dense == 0 and verdict.lexical == 0:
                doc["evidence"]["reason"] = "no indexed file passes the filters (--tag / --path)"
        doc["query"] = query
        doc["params"] = dataclasses.asdict(params)
        doc["variants"] = c.variants
        doc["expand"] = {"used": False, **c.notes.get("expand", {})}
        doc["rerank"] = {"used": ranking.reranked, "model": c.rerank_model, **c.notes.get("rerank", {})}
        doc["generation"] = self._generation
        return doc

    def close(self) -> None:
        self.store.close()


def _emptied(c: Candidates) -> Candidates:
    """[ranking] The same pass with no candidates: what a query without evidence returns."""
    none = np.empty(0, np.int64)
    return dataclasses.replace(
        c, dense_ids=[none for _ in c.dense_ids], lexical_ids=none, nodes=none, file_ids=none,
        qsim=np.empty(0, np.float32), lexical=np.empty(0), indptr=np.zeros(1, np.int64), nbr=none,
        weight=np.empty(0), rerank=np.empty(0), link_pairs=np.empty((0, 2), np.int64),
    )


def _breakdown(c: Candidates, r: Ranking, node: int) -> dict[str, Any]:
    rr = c.rerank[node]
    return {
        "dense": float(c.qsim[node]),
        "lexical": float(c.lexical[node]),
        "fused": float(r.fused[node]),
        "heat": float(r.trace.heat[node]),
        "rerank": None if np.isnan(rr) else float(rr),
    }


def chunks_document(s: Searcher, c: Candidates, r: Ranking, p: Params, o: QueryOptions) -> dict[str, Any]:
    top = r.order[: p.top]
    rows = s.store.chunks(c.nodes[top])
    results = []
    for rank, (node, row) in enumerate(zip(top.tolist(), rows), start=1):
        text = row["text"]
        item = {
            "rank": rank,
            **chunk_location(row),
            "score": float(r.score[node]),
            "hop": int(r.trace.hop[node]),
            "breakdown": _breakdown(c, r, node),
            "text": text[: o.text_chars],
            "truncated": len(text) > o.text_chars,
        }
        if o.explain:
            item["path"] = explain_path(c, p, r.trace, node)
        results.append(item)
    return {"results": results, "candidates": int(len(r.order))}


def files_document(s: Searcher, c: Candidates, r: Ranking, p: Params, o: QueryOptions) -> dict[str, Any]:
    file_ids, sums = rank_files(c, r, p)
    file_ids, sums = file_ids[: p.top], sums[: p.top]
    # Each shown file's chunks among the candidates, best first.
    in_order = c.file_ids[r.order]
    chunks_of = {int(f): c.nodes[r.order[in_order == f]].tolist() for f in file_ids.tolist()}
    best = s.store.chunks([ids[0] for ids in chunks_of.values()])
    results = []
    for rank, (f, total, row) in enumerate(zip(file_ids.tolist(), sums.tolist(), best), start=1):
        item = {
            "rank": rank,
            "file": row["path"],
            "score": float(total),
            "chunk_ids": chunks_of[f],
            "best_chunk": {"chunk_id": row["id"], "line_start": row["line_start"], "line_end": row["line_end"]},
        }
        if o.explain:
            node = int(c.local(np.array([row["id"]]))[0])
            item["path"] = explain_path(c, p, r.trace, node)
        results.append(item)
    return {"results": results, "candidates": int(len(r.order))}

