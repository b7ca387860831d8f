"""The lab re-scores cached passes with ragx's own scoring: digit-exact against live `ragx eval`."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("polars")

from fakes import HashEmbedder, make_corpus  # noqa: E402

from lab.passes import StaleCacheError, build_cache, check_fresh, load_cache  # noqa: E402
from lab.rescore import rescore  # noqa: E402
from ragx.api import Corpus  # noqa: E402
from ragx.config import load_settings  # noqa: E402
from ragx.eval.presets import parse_config  # noqa: E402
from ragx.eval.queries import load_queries  # noqa: E402
from ragx.eval.runner import run_eval  # noqa: E402
from ragx.index.build import run_index  # noqa: E402
from ragx.search.candidates import PassCaps  # noqa: E402

SPECS = [
    "graph",
    "a=graph,hops=1,decay=0.9,query_floor=0.1",
    "b=graph,hops=3,max_frontier=5,rrf_k=5,dense_n=7,lexical_n=3",
    "c=hybrid,beta=1,gamma=0,delta=0,file_chunks=3",
    "d=bm25",
    "e=dense,dense_n=30",
]


@pytest.fixture
def setup(tmp_path, monkeypatch):
    import ragx.models.registry as registry

    monkeypatch.setattr(registry, "make_embedder", lambda *a, **k: HashEmbedder())
    root = tmp_path / "corpus"
    root.mkdir()
    make_corpus(root, n_per_topic=10)
    run_index(root, load_settings(root), HashEmbedder())
    qfile = tmp_path / "q.jsonl"
    words = ["telescope orbit", "bread oven yeast", "sail keel", "comet flour", "harbour nebula light", "anchor", "sugar dough"]
    qfile.write_text("\n".join(json.dumps({"id": f"q{i}", "query": w, "relevant_files": [f"cooking-{i % 10}.md", f"sailing-{(i * 3) % 10}.md"]}) for i, w in enumerate(words)) + "\n")
    return Corpus(root), load_queries(qfile)


def test_offline_rescoring_is_digit_exact_against_live_eval(setup, tmp_path):
    corpus, queries = setup
    configs = [parse_config(s, corpus.settings.search) for s in SPECS]
    caps = PassCaps(dense_n=40, lexical_n=40, hops=3, query_floor=0.0)  # wider than any config
    folder = build_cache(corpus, queries, caps, tmp_path / "cache")
    passes, meta = load_cache(folder)
    qrels = {q.id: q.files for q in queries}
    for cfg in configs:
        live = run_eval(corpus.searcher, queries, [cfg])  # its own pass, caps = this config's
        offline = rescore(passes, cfg.params, qrels, meta["paths"])
        assert offline.runs == live.runs[cfg.name], cfg.name           # same files, same float scores
        assert offline.per_query == live.file_per_query[cfg.name], cfg.name
        assert offline.means == live.file_means[cfg.name], cfg.name
    assert any(0 < m["nDCG@10"] < 1 for m in live.file_per_query[cfg.name].values())


def test_stale_cache_is_refused(setup, tmp_path):
    corpus, queries = setup
    caps = PassCaps(20, 20, 2, 0.3)
    folder = build_cache(corpus, queries, caps, tmp_path / "cache")
    check_fresh(folder, corpus, caps)
    with pytest.raises(StaleCacheError, match="narrower"):
        check_fresh(folder, corpus, PassCaps(50, 20, 2, 0.3))
    (corpus.root / "extra.md").write_text("# extra\n\nsomething about telescopes\n")
    run_index(corpus.root, corpus.settings, HashEmbedder())
    with pytest.raises(StaleCacheError, match="index changed"):
        check_fresh(folder, Corpus(corpus.root), caps)
