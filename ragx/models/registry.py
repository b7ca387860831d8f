"""Provider registry: embedding engines (``make_embedder``), the reranker and the query expander.

Each engine is a factory ``(model: str, **opts) -> Embedder``. Factories import their engine
module lazily, so importing the registry costs nothing and choosing the embedded engine never
imports torch or an HTTP client.

Engines:

* ``"embedded"`` -- the bundled all-MiniLM-L6-v2 (or a local sentence-transformers directory) run
  with onnxruntime; opts ``cache_dir``, ``threads``, ``precision`` (``"fp32"`` or ``"int8"``).
* ``"openai"`` -- an OpenAI-compatible ``POST {base_url}/embeddings``; ``model`` is the served model
  name; opts ``base_url``, ``api_key_env``, ``doc_prefix``, ``query_prefix``, ``timeout``,
  ``max_retries``, ``max_tokens``, ``tokenizer``, ``doc_input_type``, ``query_input_type`` (see :mod:`ragx.models.openai_engine`),
  ``in_flight``; a ``base_url`` listing several servers makes a pool of them (:mod:`ragx.models.pool`).
* ``"sentence-transformers"`` -- ``SentenceTransformer(model)`` in process (torch); ``model`` is a
  local directory or a hub name; opts ``doc_prefix``, ``query_prefix``, ``device``.

Adding an engine (extension point): write ``ragx/models/<engine>.py`` with a class implementing
:class:`~ragx.models.base.Embedder`, add a factory below and an entry in ``_ENGINES`` (or call
:func:`register_engine` at run time, e.g. from a plugin or a test), and map its config keys in
:func:`embedder_options`.

Degraded providers (a reranker that cannot load, an expansion call that failed) do not stop a query;
they report through :func:`ragx.log.warn_once`, which prints each distinct warning once per process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config import add_engine
from .base import Embedder

__all__ = [
    "available_engines",
    "embedder_options",
    "make_embedder",
    "make_expander",
    "make_reranker",
    "register_engine",
]

EngineFactory = Callable[..., Embedder]

#: Config keys of [embeddings] each engine takes as options (besides engine, model, batch_size).
ENGINE_OPTIONS: dict[str, tuple[str, ...]] = {
    "embedded": ("precision",),
    "openai": ("base_url", "api_key_env", "doc_prefix", "query_prefix", "timeout", "max_retries", "max_tokens", "tokenizer",
               "doc_input_type", "query_input_type", "in_flight"),
    "sentence-transformers": ("doc_prefix", "query_prefix", "device"),
}


def _check_opts(engine: str, opts: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(opts) - allowed)
    if unknown:
        raise ValueError(
            f"unknown option(s) for the {engine} engine: {', '.join(unknown)} "
            f"(accepted: {', '.join(sorted(allowed))})"
        )


def _make_embedded(model: str, **opts: Any) -> Embedder:
    """Options: ``cache_dir`` (ONNX cache root), ``threads`` (onnxruntime intra-op threads),
    ``precision`` ("fp32", or "int8": the exported graph dynamically quantised, see ``quantize``)."""
    from .embedded import EmbeddedEmbedder, resolve_model

    _check_opts("embedded", opts, {"cache_dir", "threads", "precision"})
    name, path = resolve_model(model)
    return EmbeddedEmbedder(path, name, **opts)


def _make_openai(model: str, **opts: Any) -> Embedder:
    """One server: the engine itself. Several (``base_url`` lists them) or ``in_flight`` > 1: a pool of
    engines, one per server, each trying once per request (the pool retries elsewhere)."""
    from .openai_engine import OpenAIEmbedder

    _check_opts("openai", opts, {*ENGINE_OPTIONS["openai"], "backoff"})
    in_flight = int(opts.pop("in_flight", 1))
    from .pool import EmbeddingPool, split_base_urls

    urls = split_base_urls(opts.pop("base_url", "") or "")
    if len(urls) == 1 and in_flight == 1:
        return OpenAIEmbedder(model, base_url=urls[0], **opts)
    retries = int(opts.pop("max_retries", 3))
    engines = [OpenAIEmbedder(model, base_url=url, max_retries=0, **opts) for url in urls]
    return EmbeddingPool(engines, in_flight=in_flight, max_retries=retries)


def _make_sentence_transformers(model: str, **opts: Any) -> Embedder:
    from .st_engine import SentenceTransformerEmbedder

    _check_opts("sentence-transformers", opts, set(ENGINE_OPTIONS["sentence-transformers"]))
    return SentenceTransformerEmbedder(model, **opts)


_ENGINES: dict[str, EngineFactory] = {
    "embedded": _make_embedded,
    "openai": _make_openai,
    "sentence-transformers": _make_sentence_transformers,
}


def register_engine(engine: str, factory: EngineFactory) -> None:
    """Register (or replace) the factory for ``engine``."""
    _ENGINES[engine] = factory
    add_engine(engine)


def available_engines() -> list[str]:
    return sorted(_ENGINES)


def make_embedder(engine: str, model: str, **opts: Any) -> Embedder:
    """Build the embedder ``engine`` serving ``model``; ``opts`` are engine-specific.

    Cheap: engines load weights and sessions, or contact servers, lazily on first use.
    Raises ``ValueError`` for an unknown engine, model or option, and ``ConfigError`` when a
    named API-key variable is unset.
    """
    factory = _ENGINES.get(engine)
    if factory is None:
        available = ", ".join(repr(e) for e in available_engines())
        raise ValueError(f"unknown embedding engine {engine!r}; available: {available}")
    return factory(model, **opts)


def embedder_options(emb: Any) -> dict[str, Any]:
    """The [embeddings] settings the configured engine takes, as ``make_embedder`` options."""
    return {key: getattr(emb, key) for key in ENGINE_OPTIONS.get(emb.engine, ())}


def make_reranker(rerank: Any) -> Any | None:
    """The reranker [rerank] asks for, or None when ``rerank.model`` is empty. Loads lazily."""
    if not (rerank.model or "").strip():
        return None
    from .rerank import CrossEncoderReranker

    return CrossEncoderReranker(rerank.model, batch_size=rerank.batch_size, max_length=rerank.max_length, device=rerank.device)


def make_expander(expand: Any) -> Any | None:
    """The query expander [expand] asks for, or None when ``expand.enabled`` is false."""
    if not expand.enabled:
        return None
    from .expand import ChatExpander
    from .expand_cache import ExpansionCache

    return ChatExpander(
        expand.model,
        base_url=expand.base_url,
        api_key_env=expand.api_key_env,
        timeout=expand.timeout,
        max_retries=expand.max_retries,
        variants=expand.variants,
        hyde=expand.hyde,
        cache=ExpansionCache() if expand.cache else None,
    )
