"""The facade both shells (CLI, MCP) use: open a corpus, index it, report its status.

Heavy parts (the embedding model, hnswlib files) load on first use, so `status` stays light.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from . import __version__
from .config import LIMITS, Settings, check_choice, load_settings, resolve_root
from .errors import ConfigError, CorruptIndexError, NoIndexError, UsageError
from .index.layout import Layout
from .index.store import ANCHORS_OUTDATED, Store, scan_started
from .scoring.params import Params

if TYPE_CHECKING:  # the index builder (chunker, Leiden, ...) loads only when a command indexes
    from .eval.beir import Materialised
    from .index.build import IndexReport, Reporter
    from .index.snapshot import Snapshot


class Corpus:
    def __init__(self, root: Path, settings: Settings | None = None):
        self.root = root
        self.settings = settings or load_settings(root)
        self.layout = Layout(root)
        self._loaded: dict[str, Any] = {}  # models and the searcher, built on first use
        # The rerank-score cache file (ragx/models/rerank_cache.py); None: <ragx cache>/rerank/scores.sqlite.
        # The lab points it beside its pass caches before the reranker is first built.
        self.rerank_scores: Path | None = None

    def _lazy(self, name: str, make):
        if name not in self._loaded:
            self._loaded[name] = make()
        return self._loaded[name]

    def loaded(self, name: str) -> Any | None:
        """The embedder, reranker, expander or searcher if already built, else None (nothing loads)."""
        return self._loaded.get(name)

    def close(self) -> None:
        searcher = self._loaded.pop("searcher", None)
        if searcher is not None:
            searcher.close()

    @classmethod
    def open(cls, root: str | Path | None = None, *, need_index: bool = False) -> "Corpus":
        corpus = cls(resolve_root(root, must_exist_index=need_index))
        if need_index and not corpus.layout.exists():
            raise NoIndexError(f"no index in {corpus.root}: run `ragx index`")
        return corpus

    @property
    def embedder(self):
        return self._lazy("embedder", self._make_embedder)

    def use_embedder(self, embedder) -> "Corpus":
        """Index and search with `embedder` instead of building the configured one (the lab wraps the
        configured engine in a vector cache). It must carry the same `name`: the index records it."""
        self._loaded["embedder"] = embedder
        return self

    def _make_embedder(self):
        from .models.registry import embedder_options, make_embedder

        emb = self.settings.embeddings
        check_choice(self.settings, "embeddings.engine")  # an engine is known once plugins registered theirs
        try:
            return make_embedder(emb.engine, emb.model, **embedder_options(emb))
        except ValueError as exc:  # the model or an option: a config problem, named with the file it came from
            raise ConfigError(f"{self.settings.sources.get('embeddings.model', 'settings')}: [embeddings] {exc}") from None

    @property
    def reranker(self):
        """The configured cross-encoder (loads on first use), or None when rerank.model is empty."""
        return self._lazy("reranker", self._make_reranker)

    def _make_reranker(self):
        """The cross-encoder behind the score cache, so no (reranker, query, chunk) pair is scored twice."""
        from .models.registry import make_reranker
        from .models.rerank_cache import CachedReranker

        try:
            reranker = make_reranker(self.settings.rerank)
        except ValueError as exc:
            raise ConfigError(f"[rerank] {exc}") from None
        return None if reranker is None else CachedReranker(reranker, self.rerank_scores)

    @property
    def expander(self):
        """The configured query expander, or None when expand.enabled is false."""
        return self._lazy("expander", self._make_expander)

    def _make_expander(self):
        from .models.registry import make_expander

        try:
            return make_expander(self.settings.expand)
        except ValueError as exc:
            raise ConfigError(f"[expand] {exc}") from None

    @property
    def searcher(self):
        return self._lazy("searcher", self._make_searcher)

    def _make_searcher(self):
        from .search.searcher import Searcher

        if not self.layout.exists():
            raise NoIndexError(f"no index in {self.root}: run `ragx index`")
        check_utf8_root(self.root)
        rerank = (lambda: self.reranker) if self.settings.rerank.model.strip() else None
        expand = (lambda: self.expander) if self.settings.expand.enabled else None
        return Searcher(self.layout, lambda: self.embedder, reranker_factory=rerank, expander_factory=expand)

    def prepare_search(self) -> None:
        """Load and open what a first query reads (a server does it before the query comes)."""
        self.searcher.prepare()

    def prepare_query_embedding(self) -> None:
        """Load what the embedder's next query needs (engines without that step have nothing to load)."""
        prepare = getattr(self.embedder, "prepare_query", None)
        if callable(prepare):
            prepare()

    def export_index(self, target: Path, *, force: bool = False) -> dict[str, Any]:
        """Write the committed index and its fingerprint to the archive `target` (ragx.export.v1's payload)."""
        from .index.transfer import export_index

        return export_index(self, target, force=force)

    def import_index(self, source: Path, *, force: bool = False) -> dict[str, Any]:
        """Install the archive `source` as this corpus's index; the files that differ (ragx.import.v1's payload)."""
        from .index.transfer import import_index

        return import_index(self, source, force=force)

    def doctor(self) -> dict[str, Any]:
        """Run every configured provider for real and check the index against the config (ragx.doctor.v1)."""
        from .doctor import run_doctor

        return run_doctor(self)

    def query(self, text: str, *, top: int | None = None, files_only: bool = False, explain: bool = False,
              graph: bool | None = None, lexical: bool = True, rerank: bool = True, expand: bool = True,
              params: Params | None = None, time: Any = None, tags: tuple[str, ...] = (), path_glob: str | None = None,
              evidence_check: bool = True) -> dict[str, Any]:
        """One query; the payload of a ragx.query.v1 (or, with files_only, ragx.files.v1) document.

        `time` (file_context.TimeOptions): --since/--until filters and --recent/--oldest boosts. Every
        result also gets its file's `date`, `date_source` and `stale`. `tags`, `path_glob`: only files with
        every tag and a path matching the glob. `evidence_check` False: results even when the "nothing
        relevant" rule finds no evidence (its verdict is still reported)."""
        from .file_context import WIDE_TOP, annotate
        from .search.filters import Filters, relative_glob
        from .search.results import QueryOptions

        p = (params or self.settings.search).switched(graph=graph, lexical=lexical, rerank=rerank)
        if top is not None:
            limit = LIMITS["search.top"]  # the one table: the CLI, MCP and ragx.toml share the bound
            if not limit.allows(top):
                raise UsageError(f"top = {top} is out of range: it must be {limit.describe()} (as search.top)")
            p = p.replace(top=top)
        wanted = p.top
        if time is not None and time.active:  # filters and boosts see every candidate, then cut to top
            p = p.replace(top=WIDE_TOP)
        filters = Filters(tuple(tags), None if path_glob is None else relative_glob(path_glob, str(self.root)))
        options = QueryOptions(files_only=files_only, explain=explain, expand=expand, filters=filters, enforce_evidence=evidence_check)
        store = self.searcher.store
        return self.searcher.search(text, p, options, finish=lambda doc: annotate(doc, store, self.root, time, wanted))

    def global_query(self, text: str, *, top: int = 5, chunks: int = 3, evidence_check: bool = True) -> dict[str, Any]:
        """Communities (topics) ranked for a corpus-level question: the payload of ragx.global.v1.

        The "nothing relevant" rule of a plain query judges the question first: without evidence
        anywhere in the corpus, no community is listed (`evidence` says why) unless `evidence_check`
        is False."""
        from .topics import rank_communities

        if top < 1 or chunks < 1:
            raise UsageError("--top must be at least 1")
        searcher = self.searcher
        qvec = searcher.embedder.embed_query(text)
        with searcher.reading() as snap:  # rows and arrays of one commit, and the file rows behind `stale`
            searcher.check_model()
            verdict = searcher.corpus_verdict(text, qvec, snap, self.settings.search)
            doc = rank_communities(searcher.store, snap, qvec, text, top, chunks)
            _mark_stale_topics(doc["communities"], searcher.store, self.root)
        if not verdict.match and evidence_check:
            doc["communities"] = []
        doc["evidence"] = {**verdict.describe(), "enforced": evidence_check}
        return doc

    def evaluate(self, queries: str | Path | list, configs: list | None = None, progress=None,
                 metrics: str = "ir", top: int = 0) -> dict[str, Any]:
        """Run labelled queries under several configurations: the payload of a ragx.eval.v1 document.

        `queries` is a queries file or already-loaded LabelledQuery objects; `configs` holds `--config`
        specs ("name=preset,key=value") or EvalConfig objects (the lab's live check), default presets if None;
        `metrics` the metric set ("ir", or "code" for file localisation: ragx/eval/metrics.py); with `top`,
        the document also holds each configuration's `top` files per query with their scores ("top_files").
        """
        from .eval.presets import DEFAULT_CONFIGS, parse_config
        from .eval.queries import check_labelled_files, load_queries
        from .eval.runner import DEPTH, run_eval

        source: Path | None = None
        if isinstance(queries, (str, Path)):
            source = Path(queries)
            labelled = load_queries(source)
        else:
            labelled = list(queries)
        parsed = [parse_config(c, self.settings.search) if isinstance(c, str) else c for c in (configs or DEFAULT_CONFIGS)]
        names = [c.name for c in parsed]
        if len(set(names)) != len(names):
            raise UsageError(f"--config names must be unique, got {names}")
        searcher = self.searcher
        searcher.refresh()
        check_labelled_files(labelled, searcher.store.files(), source or "the labelled queries")
        pairs_before = self._rerank_pairs()
        result = run_eval(searcher, labelled, parsed, progress, metrics)
        counts = searcher.store.counts()
        meta = {
            "corpus": str(self.root),
            "queries_file": str(source) if source is not None else None,
            "n_queries": len(labelled),
            "n_files": counts["files"],
            "n_chunks": counts["chunks"],
            "model": searcher.manifest.get("embedder"),
            "depth": DEPTH,
        }
        pairs_after = self._rerank_pairs()
        if pairs_after is not None:  # a reranker ran: pairs it computed vs read from its score cache
            meta["rerank_pairs"] = {k: v - (pairs_before or {}).get(k, 0) for k, v in pairs_after.items()}
        doc = result.document(meta)
        if top:
            doc["top_files"] = result.top_files(top)
        return doc

    def _rerank_pairs(self) -> dict[str, int] | None:
        """Cross-encoder pairs computed and read from the score cache so far; None while no reranker was built."""
        reranker = self.loaded("reranker")
        if reranker is None:
            return None
        return {"computed": int(getattr(reranker, "computed", 0)), "cached": int(getattr(reranker, "hits", 0))}

    def inspect(self, what: str, arg: str | None = None) -> dict[str, Any]:
        """`what` is chunk ID, file PATH, neighbors ID, communities, or community N: one read snapshot.
        The document names the target as `what` (`neighbours` is read as `neighbors`)."""
        from .file_context import mark_stale
        from .inspect_args import checked

        name, value = checked(what, arg)
        searcher = self.searcher
        with searcher.reading() as snap:  # the file rows behind `stale` from the same commit as the chunks
            return mark_stale({"what": name, **self._inspect(searcher.store, snap, name, value)}, searcher.store, self.root)

    def _inspect(self, store: Store, snap: Snapshot, what: str, arg: str | int | None) -> dict[str, Any]:
        from .index import inspect

        if what == "chunk":
            return inspect.chunk(store, snap, int(arg or 0))
        if what == "file":
            return inspect.file(store, self.relative(str(arg)))
        if what == "neighbors":
            return inspect.neighbors(store, snap, int(arg or 0))
        if what == "communities":
            from .index.labels import attach_labels

            return attach_labels(inspect.communities(store), store.labels())
        return inspect.community(store, int(arg or 0))

    def relative(self, path: str | Path) -> str:
        """A path inside the corpus as stored (POSIX, relative to the root); refuses paths outside it."""
        if "\0" in str(path):
            raise UsageError(f"path contains a NUL byte: {_shown(path)}")
        p = Path(path).expanduser()
        if not p.is_absolute():
            p = self.root / p
        try:
            rel = Path(*_normalise(p).parts).relative_to(self.root.resolve())
        except ValueError:
            raise UsageError(f"{_shown(path)} is outside the corpus root {_shown(self.root)}") from None
        return rel.as_posix()

    def index(self, *, full: bool = False, path: str | Path | None = None, reporter: Reporter | None = None) -> IndexReport:
        """Bring the index up to date; `path` (a file or folder inside the root) limits the refresh to it."""
        from .index.build import run_index

        check_utf8_root(self.root)  # before anything is written: the ANN index file needs a UTF-8 path
        only = None
        if path is not None:
            only = self.relative(path)
            if not self._was_indexed(only):
                if not (self.root / only).exists():
                    raise UsageError(f"{_shown(path)} does not exist in the corpus and was not indexed")
                self._check_indexable(only, path)
        report = run_index(self.root, self.settings, self.embedder, full=full, only=only, reporter=reporter)
        searcher = self.loaded("searcher")
        if searcher is not None:
            searcher.refresh()
        return report

    def watch(self, say: Callable[[str], None], *, on_quiet: Callable[[], bool] | None = None, quiet_seconds: float = 1.0) -> None:
        """Keep `ragx watch`'s change feed for this corpus until interrupted (ragx/index/watcher.py): index
        runs meanwhile look only at what changed. `on_quiet`: called once changes settle (an index run)."""
        from .index.watcher import watch

        watch(self.root, self.layout.dir, say, on_quiet, quiet_seconds)

    def _was_indexed(self, only: str) -> bool:
        """Whether the index holds `only` or files below it (a deleted path may still be refreshed)."""
        if only == ".":
            return True  # the root: the whole corpus
        if not self.layout.exists():
            return False
        store = Store(self.layout.db, readonly=True)
        try:
            return any(p == only or p.startswith(only + "/") for p in store.files())
        finally:
            store.close()

    def _check_indexable(self, only: str, path: str | Path) -> None:
        """Refuse `only` (there, not indexed yet) when the corpus's rules index nothing at or below it:
        asked to index an image, the config or the index itself, `index` would otherwise report success
        having done nothing. The corpus walk of `ragx status` decides (what an index run would find)."""
        from .index.diff import diff_corpus
        from .ingest.discover import ALWAYS_SKIPPED_DIRS, ROOT_SKIPPED_FILES

        # Against the index's files, as status walks: only new files are read (to tell binaries apart).
        store = Store(self.layout.db, readonly=True) if self.layout.exists() else None
        try:
            if store is None:
                diff = diff_corpus(self.root, self.settings)
            else:
                with store.snapshot():
                    stored, undecodable, started = store.files(), store.undecodable(), scan_started(store.manifest())
                diff = diff_corpus(self.root, self.settings, stored, undecodable, started)
        finally:
            if store is not None:
                store.close()
        # Nothing at or below `only` is indexed, so whatever the walk finds there is new.
        if any(f.path == only or f.path.startswith(only + "/") for f in diff.new):
            return
        is_dir = (self.root / only).is_dir()
        told = [p for p in diff.skipped + diff.problems if p.path == only] if not is_dir else []
        parts = only.split("/")
        if told:
            why = told[0].reason
        elif parts[0] == ".ragx":
            why = "it is ragx's own index folder"
        elif any(part.startswith(".") for part in parts):
            why = "dot-files and dot-folders are never indexed"
        elif only in ROOT_SKIPPED_FILES:
            why = "it is the corpus's ragx settings"
        elif any(part in ALWAYS_SKIPPED_DIRS for part in parts):
            why = f"{', '.join(sorted(ALWAYS_SKIPPED_DIRS))} folders are never indexed"
        elif is_dir:
            why = "no file below it is indexed by this corpus's rules (file types, .gitignore, index.include/exclude)"
        else:
            why = ("not a file type ragx indexes, or left out by .gitignore or index.include/exclude "
                   "(`ragx config get index.include`)")
        raise UsageError(f"{_shown(path)} is not indexed by this corpus: {why}")

    def status(self, *, drift: bool = True, verify: bool = True, deep: bool = False) -> dict[str, Any]:
        """Counts, model, drift and an integrity check (`deep` also reads every vector back from HNSW)."""
        from .index.diff import IncludeMatchesNothing, diff_corpus  # the corpus walk (pathspec, xxhash): status only, not query

        out: dict[str, Any] = {"root": str(self.root), "indexed": False}
        store = Store(self.layout.db, readonly=True) if self.layout.exists() else None
        try:
            if store is not None:
                with store.snapshot():
                    manifest = store.manifest()
            # No committed generation: no index run ever finished (one may have been killed).
            if store is None or "generation" not in manifest:
                out["drift"] = _drift(diff_corpus(self.root, self.settings)) if drift else None
                return out
            out["indexed"] = True
            with store.snapshot():
                manifest = store.manifest()  # again, inside the snapshot that reads everything else
                out |= store.counts()
                out["model"] = manifest.get("embedder")
                out["dim"] = manifest.get("dim")
                out["generation"] = manifest.get("generation")
                out["updated_at"] = manifest.get("updated_at")
                out["graph"] = manifest.get("graph")
                out["chunking"] = manifest.get("chunking")
                include_notice = []
                if drift:
                    try:
                        diff = diff_corpus(self.root, self.settings, store.files(rows_on_demand=True), store.undecodable(), scan_started(manifest))
                    except IncludeMatchesNothing as exc:  # the settings' fault, not the index's: no drift to tell
                        include_notice = [str(exc)]
                        out["drift"] = None
                    else:
                        out["drift"] = _drift(diff)
                        out["drifted"] = _drifted(diff)
                        out["skipped"] = len(diff.skipped)  # binary, too large, not UTF-8: not drift, never indexed
                        out["not_indexed"] = _not_indexed(diff)
                if verify:
                    from .index.verify import verify_index

                    out["problems"] = verify_index(self.layout, store, manifest, deep)
                    out["consistent"] = not out["problems"]
                # what an upgrade or a config change left to the next index run (the index is consistent meanwhile)
                out["notices"] = (([ANCHORS_OUTDATED] if store.anchors_need_update() else []) + include_notice
                                  + _settings_changed(manifest, self.settings))
        finally:
            if store is not None:
                store.close()
        return out


def _normalise(p: Path) -> Path:
    """Resolve `..` and symlinked parents without requiring the path to exist."""
    import os

    if "\0" in str(p):  # realpath would raise ValueError: "embedded null byte"
        raise UsageError(f"path contains a NUL byte: {_shown(p)}")
    return Path(os.path.realpath(p))


def _shown(path: str | Path) -> str:
    """A path echoed in a message: as it is, or quoted with its control characters (and bytes that
    are not UTF-8) escaped, so that a message stays one printable line."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def check_utf8_root(root: Path) -> None:
    """The ANN index library takes its file paths as UTF-8 text: a corpus under a folder whose name
    is not UTF-8 cannot be indexed (nor searched). One line, before anything is written."""
    import os

    try:
        str(root).encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(str(root)).decode("utf-8", "backslashreplace")
        raise UsageError(f"the corpus path is not valid UTF-8: {shown} (rename the folder)") from None


def _settings_changed(manifest: dict[str, Any], settings: Settings) -> list[str]:
    """The settings that differ from those the index was built with, each said as `ragx index` says it
    (ragx/index/identity.py, the one rule), naming the setting and the `--full` run it needs. Only the
    config's own settings (chunking, graph, schema) are compared: the embedder's identity needs the model
    built (the dimension may need its server), which status never does; a query and `ragx doctor` check it."""
    from types import SimpleNamespace

    from .index.identity import HINT, index_identity, mismatches

    recorded_chunking = manifest.get("chunking")
    chunking: dict[str, Any] = recorded_chunking if isinstance(recorded_chunking, dict) else {}
    recorded = SimpleNamespace(  # the embedder's part as recorded: never a difference here
        name=manifest.get("embedder"), dim=0,
        token_counter=lambda: SimpleNamespace(max_content_tokens=chunking.get("max_tokens", 0)),
    )
    wanted, stored = _dotted(index_identity(settings, recorded)), _dotted(manifest)
    for key in ("embedder", "dim", "chunking.max_tokens"):
        wanted.pop(key, None)
    return [f"index was {found}: {HINT} (or restore the setting)" for found in mismatches(stored, wanted)]


def _dotted(values: dict[str, Any]) -> dict[str, Any]:
    """{"graph": {"min_sim": 0.3}} -> {"graph.min_sim": 0.3}: a mismatch names the setting itself."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out |= {f"{key}.{k}": v for k, v in value.items()}
        else:
            out[key] = value
    return out


def _mark_stale_topics(communities: list[dict[str, Any]], store: Store, root: Path) -> None:
    """`stale` on every community's chunks, as a query's results carry it, and `stale_files`: those of
    its `top_files` changed or deleted since they were indexed. One file-row read for all of them, in
    the caller's read transaction."""
    from .file_context import mark_stale

    tops = [[{"file": path} for path in c["top_files"]] for c in communities]
    mark_stale({"chunks": [ch for c in communities for ch in c["chunks"]] + [e for t in tops for e in t]}, store, root)
    for c, top in zip(communities, tops):
        c["stale_files"] = [e["file"] for e in top if e["stale"]]


def _drift(diff) -> dict[str, int]:
    counts = diff.counts()
    return {"new": counts["new"], "changed": counts["changed"], "deleted": counts["deleted"], "unreadable": len(diff.problems)}


def _not_indexed(diff) -> dict[str, list[dict[str, str]]]:
    """The files behind the `unreadable` and `skipped` counts, each with its reason."""
    def rows(problems) -> list[dict[str, str]]:
        return [{"path": p.path, "reason": p.reason} for p in sorted(problems, key=lambda p: p.path)]

    return {"unreadable": rows(diff.problems), "skipped": rows(diff.skipped)}


def _drifted(diff) -> dict[str, list[str]]:
    """The paths behind the drift counts: files new, changed or deleted since the last index run."""
    return {
        "new": sorted(f.path for f in diff.new),
        "changed": sorted(f.path for f in diff.changed),
        "deleted": sorted(r.path for r in diff.deleted),
    }


def time_filter(since: str | None, until: str | None, recent: bool = False, oldest: bool = False) -> Any:
    """The `time` argument of `Corpus.query` from --since/--until dates and the --recent/--oldest boosts
    (a bad date is a UsageError): the web page builds it as the CLI does."""
    from .file_context import time_options

    return time_options(since, until, recent, oldest)


def search_params(values: dict[str, Any]) -> Params:
    """Params from their recorded form (a `ragx eval` configuration's "params"); unknown or missing keys
    (a run written by another version) are a UsageError."""
    try:
        return Params(**values)
    except TypeError as exc:
        raise UsageError(f"these search params are not this version's: {exc}") from None


def labelled_queries(path: str | Path) -> dict[str, dict[str, Any]]:
    """A queries file (queries.jsonl) as {id: {"text", "files": {path: grade}}}."""
    from .eval.queries import load_queries

    return {q.id: {"text": q.text, "files": dict(q.files)} for q in load_queries(Path(path))}


def paired_comparison(scores: list[float], reference: list[float]) -> dict[str, Any]:
    """`ragx eval`'s paired test of two per-query score lists (same queries, same order): mean difference,
    its bootstrap CI, the randomization p-value, wins/ties/losses."""
    import numpy as np

    from .eval.stats import paired

    return paired(np.asarray(scores, dtype=np.float64), np.asarray(reference, dtype=np.float64)).to_json()


def version_info(root: str | Path | None = None) -> dict[str, Any]:
    try:
        settings = load_settings(resolve_root(root), warn=False)
    except Exception:  # noqa: BLE001 - --version must answer even beside a broken config
        settings = load_settings(None, warn=False)
    return {
        "version": __version__,
        "embeddings": dataclasses.asdict(settings.embeddings),
        "rerank": settings.rerank.model or None,
        "expand": settings.expand.model if settings.expand.enabled else None,
    }


def open_collection(data_dir: Path, folder: Path, split: str, index: Callable[[Any], Any] | None = None,
                    reporter=None, also: tuple[str, ...] = ()) -> tuple[Corpus, Materialised, Any]:
    """Materialise a BEIR folder into `folder` and bring its index up to date: (Corpus, Materialised,
    what indexing returned: an IndexReport by default). The splits in `also` are materialised too where
    the collection has them (`ragx eval --gap` asks for train).

    `index(corpus)` replaces the plain `corpus.index(reporter=reporter)` (the lab waits out a busy lock).
    The one way both `ragx eval beir` and the lab turn a collection into an indexed corpus.
    """
    from .eval.beir import materialise

    extra = [x for x in also if x != split and (Path(data_dir) / "qrels" / f"{x}.tsv").is_file()]
    made = materialise(Path(data_dir), Path(folder), [split, *extra])
    corpus = Corpus.open(made.corpus_dir)
    report = index(corpus) if index is not None else corpus.index(reporter=reporter)
    return corpus, made, report


def index_database(root: Path) -> Path:
    """Where the index database of the corpus at `root` is (whether or not one was built yet)."""
    return Layout(root).db


def has_index(root: Path) -> bool:
    """Whether the corpus at `root` has an index."""
    return Layout(root).exists()


def project_manifest(folder: Path) -> str | None:
    """The code-project manifest at the folder's root (pyproject.toml, package.json, ...), or None (`ragx init`)."""
    from .ingest.folder_survey import project_manifest as found

    return found(folder)


def markdown_includes(folder: Path) -> tuple[str, ...]:
    """The include globs `ragx init` proposes for a notes vault (mostly markdown); () for any other folder."""
    from .ingest.folder_survey import markdown_includes as proposed

    return proposed(folder)


def survey_models(urls: list[str], folders: list[Path]) -> dict[str, Any]:
    """The ragx.models.v1 payload: embedding engines on this machine, these servers and folders included."""
    from .models.discover import survey

    return survey(urls, folders)


def pick_model(doc: dict[str, Any], use: str) -> dict[str, Any]:
    """The candidate of a `survey_models` document named by its id or number (LookupError: none)."""
    from .models.discover import pick

    return pick(doc, use)


def __getattr__(name: str):
    if name == "IndexReport":  # re-exported lazily (see the TYPE_CHECKING import above)
        from .index.build import IndexReport

        return IndexReport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Corpus", "IndexReport", "labelled_queries", "open_collection", "paired_comparison", "search_params", "time_filter",
           "version_info", "CorruptIndexError"]
