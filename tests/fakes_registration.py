"""Registers the embedding engine "test-hash" (fakes.HashEmbedder) in this process.

For tests that run ragx in a subprocess, where monkeypatching is impossible: start it as
`python -c "import fakes_registration; from ragx.cli.main import run; run([...])"` with `tests/` on
PYTHONPATH, over a corpus whose ragx.toml says `[embeddings] engine = "test-hash"`. Uses the
supported extension point `ragx.models.registry.register_engine`; the product knows nothing of it.
"""

from __future__ import annotations

from ragx.models.registry import register_engine

ENGINE = "test-hash"
RAGX_TOML = f'[embeddings]\nengine = "{ENGINE}"\n'


def _hash_embedder(model: str, **opts):
    from fakes import HashEmbedder  # when the engine is built: fakes imports numpy, which status never loads

    return HashEmbedder()


register_engine(ENGINE, _hash_embedder)
