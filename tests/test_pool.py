"""The embedding pool: several OpenAI-compatible servers used as one engine (ragx/models/pool.py)."""

from __future__ import annotations

import json
import random
import sqlite3

import numpy as np
import pytest
from fakes import HashEmbedder
from servers import FakeOpenAI, free_port, provider_env  # noqa: F401 (fixture)

from ragx.errors import ProviderError
from ragx.models.openai_engine import HTTPStatusError, OpenAIEmbedder
from ragx.models.pool import EmbeddingPool
from ragx.models.registry import make_embedder

pytestmark = pytest.mark.usefixtures("provider_env")


def texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = "ann graph vector index chunk note link query server batch pool journal".split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) + f" #{i}" for i in range(n)]


def embedded_inputs(*servers: FakeOpenAI) -> list[str]:
    """Every text the servers answered with vectors (requests that failed or died are left out)."""
    return [t for s in servers for r in s.requests[: s.die_after] for t in r["body"]["input"]]


def pool_of(*servers: FakeOpenAI, in_flight: int = 2, notes: list[str] | None = None, max_retries: int = 3) -> EmbeddingPool:
    engines = [OpenAIEmbedder("hash-64", base_url=s.base_url, max_retries=0, timeout=5.0) for s in servers]
    return EmbeddingPool(engines, in_flight=in_flight, max_retries=max_retries, notify=(notes if notes is not None else []).append)


def test_a_base_url_listing_servers_makes_a_pool_with_the_vectors_of_one_server():
    with FakeOpenAI(HashEmbedder()) as a, FakeOpenAI(HashEmbedder()) as b:
        pool = make_embedder("openai", "hash-64", base_url=f"{a.base_url}, {b.base_url}", in_flight=2)
        single = make_embedder("openai", "hash-64", base_url=a.base_url)
        assert isinstance(pool, EmbeddingPool) and not isinstance(single, EmbeddingPool) and pool.name == single.name
        assert pool.base_url == f"{a.base_url}, {b.base_url}"
        docs = texts(600)
        got = pool.embed_documents(docs, batch_size=16)
        a_count = len(embedded_inputs(a))
        assert got.tobytes() == single.embed_documents(docs, batch_size=16).tobytes()
        assert a_count and len(embedded_inputs(b))  # both servers took batches
        assert pool.served_model == "hash-64"
        shuffled = list(range(600))
        random.Random(1).shuffle(shuffled)
        assert np.array_equal(pool.embed_documents([docs[i] for i in shuffled], batch_size=16), got[shuffled])


def test_each_text_is_sent_once_when_every_server_answers():
    with FakeOpenAI(HashEmbedder()) as a, FakeOpenAI(HashEmbedder()) as b:
        docs = texts(333)
        pool_of(a, b).embed_documents(docs, batch_size=10)
        assert sorted(embedded_inputs(a, b)) == sorted(docs)


def test_a_server_that_dies_mid_run_loses_no_vector_and_a_line_says_so():
    notes: list[str] = []
    with FakeOpenAI(HashEmbedder()) as a, FakeOpenAI(HashEmbedder()) as b, FakeOpenAI(HashEmbedder()) as clean:
        a.die_after = 3
        docs = texts(400)
        got = pool_of(a, b, notes=notes).embed_documents(docs, batch_size=8)
        reference = OpenAIEmbedder("hash-64", base_url=clean.base_url).embed_documents(docs, batch_size=8)
        assert got.tobytes() == reference.tobytes()
        assert sorted(embedded_inputs(a, b)) == sorted(docs)  # the died server's last batches went to b, once
        assert len(notes) == 1 and a.base_url in notes[0] and "failed" in notes[0] and "no vector is lost" in notes[0]


def test_a_server_that_fails_for_a_while_takes_batches_again():
    notes: list[str] = []
    with FakeOpenAI(HashEmbedder()) as a, FakeOpenAI(HashEmbedder()) as b:
        a.fail(2, 503)
        b.delay = 0.05  # slow enough that a is needed again after its rest
        pool = pool_of(a, b, in_flight=1, notes=notes)
        import ragx.models.pool as pool_module

        pool_module.REST_SECONDS, saved = 0.05, pool_module.REST_SECONDS
        try:
            got = pool.embed_documents(texts(300), batch_size=4)
        finally:
            pool_module.REST_SECONDS = saved
        assert got.shape == (300, 64)
        assert any("failed (HTTP 503" in n for n in notes) and any("answers again" in n for n in notes)
        assert len(embedded_inputs(a)) > 0


def test_every_server_down_ends_the_run_with_one_error():
    a, b = FakeOpenAI(HashEmbedder(), port=free_port()), FakeOpenAI(HashEmbedder(), port=free_port())
    with pytest.raises(ProviderError, match="unreachable"):
        pool_of(a, b, max_retries=0).embed_documents(texts(20), batch_size=4)


def test_a_rejected_request_ends_the_run_at_once_without_trying_elsewhere():
    with FakeOpenAI(HashEmbedder()) as a, FakeOpenAI(HashEmbedder()) as b:
        a.fail(1, 400, "input too long")
        b.fail(1, 400, "input too long")
        with pytest.raises(HTTPStatusError, match="input too long"):
            pool_of(a, b, in_flight=1).embed_documents(texts(40), batch_size=4)


def test_queries_go_to_a_server_that_answers():
    with FakeOpenAI(HashEmbedder()) as b:
        a = FakeOpenAI(HashEmbedder(), port=free_port())  # never started: refused
        vec = pool_of(a, b).embed_query("vector index")
        assert np.allclose(vec, HashEmbedder()._one("vector index"), atol=1e-6)


def test_an_index_built_through_two_servers_equals_one_built_through_one(tmp_path):
    from fakes import make_corpus
    from servers import openai_toml, write_toml

    from ragx.api import Corpus
    from ragx.index.snapshot import Snapshot

    def vectors(root):
        report = Corpus.open(root).index()
        db = sqlite3.connect(root / ".ragx" / "index.sqlite")
        meta = dict(db.execute("SELECT key, value FROM manifest").fetchall())
        db.close()
        ids, vecs = Snapshot.load_vectors(root / ".ragx" / f"gen-{int(meta['generation']):06d}", json.loads(meta["checksums"]))
        return report, ids.tolist(), np.asarray(vecs).tobytes()

    with FakeOpenAI(HashEmbedder()) as a, FakeOpenAI(HashEmbedder()) as b:
        roots = {}
        for name, url, extra in (("one", a.base_url, ""), ("two", f"{a.base_url}, {b.base_url}", "in_flight = 2\nbatch_size = 4\n")):
            root = roots[name] = tmp_path / name
            root.mkdir()
            make_corpus(root)
            write_toml(root, openai_toml(url, extra=extra if extra else "batch_size = 4\n"))
        one, two = vectors(roots["one"]), vectors(roots["two"])
        assert one[1:] == two[1:] and two[0].embedded_chunks == one[0].embedded_chunks > 0
        assert len(embedded_inputs(b)) > 0
