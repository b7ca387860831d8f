"""Engine registry: ``make_embedder(engine, model, **opts)``.

Each engine is a factory ``(model: str, **opts) -> Embedder``. Factories import their engine
module lazily, so importing the registry costs nothing and choosing the embedded engine never
imports torch or an HTTP client.

Adding an engine (extension point): write ``ragx/models/<engine>.py`` with a class implementing
:class:`~ragx.models.base.Embedder`, add a factory below and an entry in ``_ENGINES`` (or call
:func:`register_engine` at run time, e.g. from a plugin or a test). Planned:

* ``"openai"`` -- an OpenAI-compatible ``/v1/embeddings`` endpoint; ``model`` is the served model
  name, opts like ``base_url``, ``api_key_env``, ``dim``, ``max_tokens``, ``timeout``.
* ``"sentence-transformers"`` -- ``SentenceTransformer(model, device=...)`` in process (torch);
  ``model`` is a local path or an installed model, opts like ``device``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import Embedder

__all__ = ["PLANNED_ENGINES", "available_engines", "make_embedder", "register_engine"]

EngineFactory = Callable[..., Embedder]

#: Engines that are designed but not written yet (named in the error message).
PLANNED_ENGINES = ("openai", "sentence-transformers")


def _make_embedded(model: str, **opts: Any) -> Embedder:
    """Options: ``cache_dir`` (ONNX cache root), ``threads`` (onnxruntime intra-op threads)."""
    from .embedded import EmbeddedEmbedder, resolve_model

    allowed = {"cache_dir", "threads"}
    unknown = sorted(set(opts) - allowed)
    if unknown:
        raise ValueError(
            f"unknown option(s) for the embedded engine: {', '.join(unknown)} "
            f"(accepted: {', '.join(sorted(allowed))})"
        )
    name, path = resolve_model(model)
    return EmbeddedEmbedder(path, name, **opts)


# Extension point: "openai": _make_openai, "sentence-transformers": _make_sentence_transformers.
_ENGINES: dict[str, EngineFactory] = {
    "embedded": _make_embedded,
}


def register_engine(engine: str, factory: EngineFactory) -> None:
    """Register (or replace) the factory for ``engine``."""
    _ENGINES[engine] = factory


def available_engines() -> list[str]:
    return sorted(_ENGINES)


def make_embedder(engine: str, model: str, **opts: Any) -> Embedder:
    """Build the embedder ``engine`` serving ``model``; ``opts`` are engine-specific.

    Cheap: engines load weights and sessions lazily, on first use.
    Raises ``ValueError`` for an unknown engine, model or option.
    """
    factory = _ENGINES.get(engine)
    if factory is None:
        available = ", ".join(repr(e) for e in available_engines())
        if engine in PLANNED_ENGINES:
            raise ValueError(
                f"embedding engine {engine!r} is not implemented yet; available: {available}"
            )
        raise ValueError(
            f"unknown embedding engine {engine!r}; available: {available} "
            f"(planned: {', '.join(PLANNED_ENGINES)})"
        )
    return factory(model, **opts)
