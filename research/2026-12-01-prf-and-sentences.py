"""Two more ranking signals at equal candidates (issue 13): dense pseudo-relevance feedback and
sub-chunk (sentence) cosine. Every variant re-scores the same cached pass (dense 100 + BM25 100 seeds,
graph off: the shipped defaults) with ragx's own `score`/`file_run`; only the dense signal changes.

    prf:        q' = normalise(q + beta * mean of the top-k chunk vectors under the default ranking);
                the candidates' cosines are recomputed against q'.
    sentences:  every chunk's stored text is split into sentences (runs of >= 6 words) and each is
                embedded; a candidate's dense signal becomes (1 - a) * chunk cosine + a * best sentence cosine.

    RAGX_CACHE_DIR=... python research/2026-12-01-prf-and-sentences.py prf dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-prf-and-sentences.py sentences dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-prf-and-sentences.py sentences dendron-vault-test scifact-test
    python research/2026-12-01-prf-and-sentences.py compare a0.5 dendron-vault-test scifact-test

Pass caches, sentence vectors and per-query results go to $RAGX_CACHE_DIR/research-prf/.
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import replace

import numpy as np

from lab.studies.harness import OUT, compare, load, ndcg
from ragx.scoring.score import score

SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def prf(corpus, passes, qv, p, k: int, beta: float):
    corpus.searcher.refresh()
    snap = corpus.searcher.snapshot
    ids = np.asarray(snap.ids)
    order = np.argsort(ids)
    vectors = np.asarray(snap.vectors)
    out = []
    for c in passes:
        x = vectors[order[np.searchsorted(ids[order], c.nodes)]].astype(np.float64)
        q = qv[c.qid] + beta * x[score(c, p).order[:k]].mean(axis=0)
        out.append(replace(c, qsim=(x @ (q / np.linalg.norm(q))).astype(np.float32)))
    return out


def split_sentences(text: str) -> list[str]:
    out, buf = [], ""
    for s in (s.strip() for s in SENTENCE.split(text)):
        buf = f"{buf} {s}".strip()
        if len(buf.split()) >= 6:
            out.append(buf)
            buf = ""
    if buf:
        out = out[:-1] + [f"{out[-1]} {buf}"] if out else [buf]
    return out or [text[:2000]]


def sentence_vectors(coll: str, corpus):
    f = OUT / f"sentences-{coll}.npz"
    if f.exists():
        z = np.load(f)
        return z["ids"], z["offs"], z["S"]
    ids, _, _, texts = corpus.searcher.store.every_chunk()
    sents: list[str] = []
    offs = [0]
    for t in texts:
        sents += split_sentences(t)
        offs.append(len(sents))
    started = time.time()
    vectors = corpus.embedder.embed_documents(sents, batch_size=32)
    print(f"{coll}: {len(sents)} sentences embedded in {time.time() - started:.0f} s", flush=True)
    f.parent.mkdir(parents=True, exist_ok=True)
    np.savez(f, ids=ids, offs=np.array(offs), S=vectors)
    return ids, np.array(offs), vectors


def best_sentence(c, qvec, ids, offs, vectors) -> np.ndarray:
    r = np.searchsorted(ids, c.nodes)
    starts, lens = offs[r], offs[r + 1] - offs[r]
    firsts = np.cumsum(lens) - lens
    rows = np.repeat(starts, lens) + np.arange(lens.sum()) - np.repeat(firsts, lens)
    return np.maximum.reduceat(vectors[rows] @ qvec, firsts)


def study(kind: str, specs: list[str]) -> None:
    results_file = OUT / f"{kind}-results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    for spec in specs:
        coll, corpus, passes, meta, qv, p = load(spec)
        base, per = ndcg(passes, p, meta)
        results[spec] = {"base": per}
        print(f"{spec} default {base:.4f}", flush=True)
        if kind == "prf":
            grid = {f"k{k}b{beta}": prf(corpus, passes, qv, p, k, beta) for k in (3, 5, 10) for beta in (0.3, 0.6, 1.0)}
        else:
            ids, offs, vectors = sentence_vectors(coll, corpus)
            best = [best_sentence(c, qv[c.qid], ids, offs, vectors) for c in passes]
            grid = {f"a{a}": [replace(c, qsim=((1 - a) * c.qsim + a * b).astype(np.float32)) for c, b in zip(passes, best)]
                    for a in (0.25, 0.5, 0.75, 1.0)}
        for name, variant in grid.items():
            mean, results[spec][name] = ndcg(variant, p, meta)
            print(f"{spec} {name} {mean:.4f} ({mean - base:+.4f})", flush=True)
    results_file.write_text(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3:], OUT / "sentences-results.json")
    else:
        study(sys.argv[1], sys.argv[2:])
