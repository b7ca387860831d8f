"""A query end to end: embed -> (one read snapshot: pass -> shortlist -> rerank -> score -> documents).

`Searcher` keeps the store connection, the index arrays and the models warm between queries (the MCP
server and `ragx eval` reuse one) and follows new index generations itself.

Snapshot per read. Every read of one query happens inside ONE SQLite read transaction (WAL): the
manifest that names the generation, the BM25 lookup, the chunk rows for the reranker and the result
rows. The arrays used are those of the generation that transaction's manifest names, so rows and
arrays always come from the same commit, whatever `ragx index` commits meanwhile. (Chunk ids are never
reused and a chunk row is never updated, so a row read under the same commit is the row the arrays
describe; rows are fetched strictly, a missing one is an error, never a shifted label.)

Old generation folders. A writer keeps the folder of the previous generation and deletes older ones.
A reader loads a generation completely (ids, graph, the HNSW file; vectors are memory-mapped, which
keeps an unlinked file readable) before it uses it, so a later deletion cannot touch it. If the folder
vanishes while it is being loaded (the reader's transaction is older than two commits), the read
transaction is closed and a new one opened: its manifest names a newer generation, which is loaded
instead. The same generation failing twice is real damage, reported as such.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from ..errors import FULL_RUN, CorruptIndexError, NoIndexError, UsageError
from ..index.identity import check_embedder
from ..index.layout import Layout
from ..index.snapshot import Snapshot
from ..index.store import ANCHORS_OUTDATED, Store
from ..log import warn_once
from ..scoring.candidates import Candidates, PassCaps
from ..scoring.params import Params
from ..scoring.score import prepare, score
from .anchor_signals import anchor_signals
from .evidence import Verdict, judge
from .expand import query_vectors
from .filters import Filters, allowed_files, allowed_rows
from .generation_files import GenerationFiles
from .link_edges import NO_PAIRS, file_link_pairs
from .results import QueryOptions, chunks_document, describe_evidence, files_document
from .retrieve import retrieval_pass

NO_FILTERS = Filters()  # a query without --tag or --path (one shared frozen instance)
LOAD_ATTEMPTS = 5  # read transactions tried before a vanishing generation counts as damage


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
        self._embedder_warm = False
        self.snapshot: Snapshot | None = None
        self.manifest: dict = {}
        self.files = GenerationFiles(self.store)  # the loaded generation's file paths and roles, read once

    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        return self._embedder

    @property
    def generation(self) -> int | None:
        return self._generation

    @contextmanager
    def reading(self) -> Iterator[Snapshot]:
        """One read transaction with the arrays of the generation it sees (re-entrant: an inner call
        joins the outer transaction)."""
        if self.store.db.in_transaction:
            assert self.snapshot is not None
            yield self.snapshot
            return
        failed: set[int] = set()
        for _ in range(LOAD_ATTEMPTS):
            with self.store.snapshot():
                manifest = self.store.manifest()
                if self._adopt(manifest, failed):
                    yield self.snapshot  # type: ignore[misc]
                    return
        raise CorruptIndexError(f"index generations in {self.layout.dir} keep vanishing while loading: {FULL_RUN}")

    def _adopt(self, manifest: dict, failed: set[int]) -> bool:
        """Make the manifest's generation the loaded one; False when its folder vanished (retry)."""
        generation = manifest.get("generation")
        if generation is None:
            raise NoIndexError(f"no finished index run in {self.layout.root}: run `ragx index`")
        generation = int(generation)
        if generation != self._generation:
            try:
                snapshot = Snapshot.load(self.layout.gen(generation), with_ann=True, checksums=manifest.get("checksums"))
            except CorruptIndexError:
                if generation in failed:
                    raise
                failed.add(generation)
                return False
            self.snapshot, self._generation = snapshot, generation
            self.files = GenerationFiles(self.store)
            if self.store.anchors_need_update():
                warn_once("anchors-outdated", ANCHORS_OUTDATED)
        self.manifest = manifest
        return True

    def refresh(self) -> None:
        """Pick up the newest committed generation (cheap when nothing changed)."""
        with self.reading():
            pass

    def prepare(self) -> None:
        """Open what the first query reads before it comes: the committed generation (arrays, ANN index)
        and the embedder (made, and checked against the index's)."""
        self.refresh()
        self.check_model()

    def check_model(self) -> None:
        check_embedder(self.manifest, self.embedder)

    def candidates(self, query: str, params: Params, *, expand: bool = True, filters: Filters = NO_FILTERS) -> Candidates:
        return self.pass_with_caps(query, params.caps(), expand=expand, filters=filters)

    def pass_with_caps(self, query: str, caps: PassCaps, *, expand: bool = True, filters: Filters = NO_FILTERS) -> Candidates:
        """The retrieval pass under explicit caps (eval and the lab ask for the widest any config needs).

        Their many queries all take their vectors from the embedder's batch path (its session started
        up front), so a pass cache and a live evaluation see the same floats whatever ran first."""
        if not query.strip():
            raise UsageError("empty query")
        self._warm_embedder()
        variants, qvecs, note = query_vectors(query, self.embedder, self._expander_factory, expand)
        with self.reading() as snap:
            self.check_model()
            c = self._pass(query, qvecs, variants, snap, caps, filters)
        if note is not None:
            c.notes["expand"] = note
        return c

    def _warm_embedder(self) -> None:
        load = getattr(self.embedder, "load", None)  # engines without a start-up step have none
        if callable(load) and not self._embedder_warm:
            load()
            self._embedder_warm = True

    def _pass(self, query: str, qvecs: np.ndarray, variants: list[str], snap: Snapshot, caps: PassCaps, filters: Filters,
              link_edges: bool = True) -> Candidates:
        """The retrieval pass inside the caller's read transaction: filtered rows, then the link edges
        among the candidates' files (unless `link_edges` is False: a query whose link_weight is 0 never
        uses them; a pass kept for re-scoring does) and the anchor evidence for them."""
        allowed = allowed_rows(snap.file_ids, allowed_files(self.store, filters)) if filters.active else None
        c = retrieval_pass(query, qvecs, variants, snap, self.store, caps, allowed)
        c.link_pairs = file_link_pairs(self.store, c.file_ids) if link_edges else NO_PAIRS
        c.anchor_sim, c.anchor_lexical = anchor_signals(self.store, c.query, c.file_ids, qvecs[0], self.files)
        c.file_role = self.files.roles(c.file_ids)
        return c

    def corpus_verdict(self, query: str, qvec: np.ndarray, snap: Snapshot, params: Params) -> Verdict:
        """The "nothing relevant" rule over the whole corpus, from the retrieval pass a plain query
        makes (for answers that are not chunks: `--global`'s communities)."""
        c = retrieval_pass(query, np.asarray(qvec)[None, :], [query], snap, self.store, params.caps())
        return judge(c, params)

    def rerank(self, c: Candidates, params: Params, shortlisted: np.ndarray | None = None) -> None:
        """Fill rerank scores for the shortlist, when a reranker is configured and weighted.

        `shortlisted`: the shortlist already computed by `prepare` (else computed here)."""
        if self._reranker_factory is None:
            return
        if params.rerank_weight <= 0:
            c.notes["rerank"] = {"skipped": "turned off (--no-rerank or search.rerank_weight = 0)"}
            return
        from ..errors import ProviderError

        picked = prepare(c, params).shortlist if shortlisted is None else shortlisted
        reranker = None
        try:
            reranker = self._reranker_factory()
            with self.reading():
                rows = self.store.chunk_rows(c.nodes[picked], ("id", "text"))
            scores = reranker.score(c.query, [r["text"] for r in rows])
        except ProviderError as exc:  # the model cannot load or score: answer without it, say why once
            c.rerank_model = getattr(reranker, "name", None)
            c.notes["rerank"] = {"skipped": str(exc)}
            warn_once(f"rerank:{exc}", f"rerank skipped: {exc}")
            return
        c.rerank[picked] = scores
        c.rerank_model = getattr(reranker, "name", None)

    def search(self, query: str, params: Params, options: QueryOptions,
               finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> dict[str, Any]:
        """One query's document. `finish` (e.g. file_context.annotate: dates, staleness, time filters)
        runs on it inside the same read transaction, so the file rows it reads belong to the commit
        the results came from: a result can never carry a later commit's size and mtime, which would
        call old text fresh."""
        if not query.strip():
            raise UsageError("empty query")
        variants, qvecs, note = query_vectors(query, self.embedder, self._expander_factory, options.expand)
        with self.reading() as snap:
            self.check_model()
            c = self._pass(query, qvecs, variants, snap, params.caps(), options.filters, link_edges=params.link_weight > 0)
            if note is not None:
                c.notes["expand"] = note
            verdict = judge(c, params)  # an absolute test: is anything here relevant at all?
            if not verdict.match and options.enforce_evidence:
                c = emptied(c)
            prepared = prepare(c, params)
            self.rerank(c, params, prepared.shortlist)
            ranking = score(c, params, prepared)
            build = files_document if options.files_only else chunks_document
            doc = build(self.store, c, ranking, params, options)
            doc.update(describe_evidence(c, verdict, options))
            doc["query"] = query
            doc["params"] = dataclasses.asdict(params)
            doc["variants"] = c.variants
            doc["expand"] = {"used": False, **c.notes.get("expand", {})}
            doc["rerank"] = {"used": ranking.reranked, "model": c.rerank_model, **c.notes.get("rerank", {})}
            doc["generation"] = self._generation
            return finish(doc) if finish is not None else doc

    def close(self) -> None:
        self.store.close()


def emptied(c: Candidates) -> Candidates:
    """The same pass with no candidates: what a query without evidence returns."""
    none = np.empty(0, np.int64)
    return dataclasses.replace(
        c, dense_ids=[none for _ in c.dense_ids], lexical_ids=none, nodes=none, file_ids=none,
        qsim=np.empty(0, np.float32), lexical=np.empty(0), indptr=np.zeros(1, np.int64), nbr=none,
        weight=np.empty(0), rerank=np.empty(0), link_pairs=NO_PAIRS,
        anchor_sim=np.empty(0, np.float32), anchor_lexical=np.empty(0), file_role=np.empty(0, np.int8),
    )
