#!/usr/bin/env python
"""Count what the expansion cache saves: chat calls and embeddings on a first and a repeated evaluation.

    RAGX_CACHE_DIR=... python scripts/bench/expand_cache_counts.py                       # SciFact train, 50 queries
    python scripts/bench/expand_cache_counts.py --data /work/shared/data/cranfield --split test --queries 30

The collection is materialised and indexed as `ragx eval beir` does (reused from the RAGX cache when up
to date), embedded by the configured engine (the bundled all-MiniLM-L6-v2 by default). The chat model is
the tests' loopback fake server (tests/servers.py), answering deterministic JSON built from each query;
nothing leaves the machine. Three evaluations of the `full` preset (expansion on) run through the same
code as `ragx eval` (`run_eval`), each from a fresh Corpus: cache on and empty, cache on again, cache off.
Printed per run: chat calls, variant/HyDE texts embedded, query embeddings, seconds; then whether the
three runs ranked the same files with bit-identical scores. The cache file is a fresh temporary one.

Each run first starts the embedded engine's ONNX session (`--no-warm`: not). Without a session that
engine embeds a query in numpy (fast to start, for one-shot queries; equal to about 1e-7, not bit for
bit), and which path a query takes depends on whether anything embedded a document before it in the
process: a HyDE passage does, so an uncached evaluation switches to the session after its first query
while a fully cached one never does. Warming makes all three runs embed the queries the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
for extra in (REPO_ROOT, REPO_ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from servers import FakeOpenAI  # noqa: E402  (the loopback chat server of the tests)

from ragx.api import Corpus, open_collection  # noqa: E402
from ragx.eval.beir import cache_dir_for  # noqa: E402
from ragx.eval.presets import parse_config  # noqa: E402
from ragx.eval.queries import load_queries  # noqa: E402
from ragx.eval.runner import run_eval  # noqa: E402
from ragx.models.expand_cache import ExpansionCache  # noqa: E402


def answer_for(body: dict) -> str:
    query = body["messages"][-1]["content"].splitlines()[0].removeprefix("Search query: ")
    words = query.split()
    return json.dumps({"variants": [" ".join(reversed(words)), f"evidence on {query}", f"studies of {query}"],
                       "hyde": f"Research shows that {query}. The findings were replicated in later trials."})


class Counted:
    """Counts the texts an embedder embeds, by method (wraps the instance's own methods; the embedded
    engine's embed_query may call its embed_documents, which then is not counted twice)."""

    def __init__(self, embedder, queries: set[str]) -> None:
        self.queries, self.query_calls, self.variant_texts, self.inside = queries, 0, 0, False
        embed_query, embed_documents = embedder.embed_query, embedder.embed_documents

        def counted_query(text):
            if text in self.queries:
                self.query_calls += 1
            else:
                self.variant_texts += 1
            self.inside = True
            try:
                return embed_query(text)
            finally:
                self.inside = False

        def counted_documents(texts, **kw):
            if not self.inside:
                self.variant_texts += len(texts)
            return embed_documents(texts, **kw)

        embedder.embed_query, embedder.embed_documents = counted_query, counted_documents


def one_run(root: Path, settings, labelled, cache: ExpansionCache | None, server: FakeOpenAI, warm: bool) -> tuple[dict, dict]:
    corpus = Corpus(root, settings)
    corpus.expander.cache = cache
    if warm and hasattr(corpus.embedder, "load"):
        corpus.embedder.load()
    counted = Counted(corpus.embedder, {q.text for q in labelled})
    asked = len(server.requests)
    t0 = time.perf_counter()
    result = run_eval(corpus.searcher, labelled, [parse_config("full", settings.search)])
    seconds = time.perf_counter() - t0
    corpus.close()
    counts = {"chat_calls": len(server.requests) - asked, "variant_embeddings": counted.variant_texts,
              "query_embeddings": counted.query_calls, "seconds": round(seconds, 2),
              "nDCG@10": round(result.file_means["full"]["nDCG@10"], 4)}
    return counts, result.runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data/scifact"))
    ap.add_argument("--split", default="train")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--no-warm", action="store_true", help="don't start the embedded engine's ONNX session before each run")
    args = ap.parse_args()
    corpus, made, _ = open_collection(args.data, cache_dir_for(args.data), args.split)
    labelled = load_queries(made.queries[args.split])[: args.queries]
    with FakeOpenAI() as server, tempfile.TemporaryDirectory() as tmp:
        server.default_chat = answer_for
        settings = replace(corpus.settings, expand=replace(corpus.settings.expand, enabled=True, model="fake-chat",
                                                           base_url=server.base_url, max_retries=0))
        cache = ExpansionCache(Path(tmp) / "expand.sqlite3")
        rows, runs = {}, {}
        for name, use in (("first (cache on, empty)", cache), ("second (cache on)", cache), ("third (cache off)", None)):
            rows[name], runs[name] = one_run(corpus.root, settings, labelled, use, server, not args.no_warm)
        stored = cache.counts()
    print(f"{args.data.name} {args.split}: {len(labelled)} queries, preset full (3 variants + HyDE per query), "
          f"embedder {corpus.settings.embeddings.engine}:{corpus.settings.embeddings.model}")
    print(f"{'run':<26}{'chat calls':>11}{'variant/HyDE embeddings':>25}{'query embeddings':>18}{'seconds':>9}{'nDCG@10':>9}")
    for name, r in rows.items():
        print(f"{name:<26}{r['chat_calls']:>11}{r['variant_embeddings']:>25}{r['query_embeddings']:>18}{r['seconds']:>9}{r['nDCG@10']:>9}")
    first, *others = runs.values()
    print(f"cache file after the runs: {stored['answers']} answers, {stored['vectors']} vectors")
    print("ranked files and scores bit-identical across the three runs:", all(r == first for r in others))


if __name__ == "__main__":
    main()
