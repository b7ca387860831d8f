"""Token-level matching from the embedded model itself (issue 13): late interaction without a new model.

The dense leg compares one mean-pooled vector per chunk with one per query. The same MiniLM also gives
a vector per token before pooling; ColBERT-style late interaction scores a chunk by, for each query
token, its best cosine to any of the chunk's tokens, averaged over the query's tokens (MaxSim). That is
evidence the pooled vectors blur: whether each part of a question finds its match somewhere in the
chunk. No model on the registries is trained for it (ColBERT checkpoints are hub-only); the question is
whether the embedder's own token vectors, untrained for it, carry usable evidence. If they did, it
would fit the reranker slot (re-encode the shortlist at query time), not the index.

    dense signal = (1 - a) * chunk cosine + a * MaxSim(query, chunk)

CLS and SEP are left out on both sides; each token vector is L2-normalised; the chunk's tokens are those
the embedder read when indexing (frontmatter header + text, truncated as the model truncates). Everything
else is the shipped defaults' scoring of the same cached pass (dense 100 + BM25 100 seeds, graph off):
equal candidates by construction. Grid fixed before running: a in (0.1, 0.2, 0.3). Chosen on TRAIN
(dendron-vault train, SciFact train) by the mean gain, only if positive; then the four test splits once.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-token-maxsim.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-token-maxsim.py study <four test specs>   # once, after choosing
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-token-maxsim.py compare a0.1 <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-token-maxsim.py pooled a0.1 <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/token-maxsim-results.json.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from lab.studies import harness
from lab.studies.harness import dense_mixes, run_command, studied

GRID = (0.1, 0.2, 0.3)
RESULTS = harness.OUT / "token-maxsim-results.json"
BATCH = 32


def token_vectors(embedder, texts: list[str]) -> list[np.ndarray]:
    """Per text, its tokens' vectors before pooling (CLS and SEP dropped), each of unit length, float16."""
    from ragx.models.embedded import OUTPUT_NAME

    ids = embedder._tokenize(texts)
    sess = embedder._get_session()
    out: list[np.ndarray] = [np.empty((0, embedder.dim), np.float16)] * len(texts)
    order = np.argsort([-len(r) for r in ids], kind="stable")
    for start in range(0, len(texts), BATCH):
        idx = order[start : start + BATCH]
        rows = [ids[i] for i in idx]
        width = max(len(r) for r in rows)
        input_ids = np.full((len(rows), width), embedder._pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for j, r in enumerate(rows):
            input_ids[j, : len(r)], mask[j, : len(r)] = r, 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in embedder._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = sess.run([OUTPUT_NAME], feeds)[0]
        for j, i in enumerate(idx.tolist()):
            h = hidden[j, 1 : len(rows[j]) - 1].astype(np.float32)
            out[i] = (h / np.maximum(np.linalg.norm(h, axis=1, keepdims=True), 1e-12)).astype(np.float16)
    return out


def chunk_tokens(coll: str, corpus, passes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chunk ids, offsets, token matrix) of every chunk any pass holds, cached per collection."""
    f = harness.OUT / f"tokens-{coll}.npz"
    if f.exists():
        z = np.load(f)
        held = np.unique(np.concatenate([c.nodes for c in passes]))
        if np.isin(held, z["ids"]).all():
            return z["ids"], z["offs"], z["T"]
    ids = np.unique(np.concatenate([c.nodes for c in passes]))
    if f.exists():  # another split of the same corpus: add its chunks to the cache
        z = np.load(f)
        ids = np.union1d(ids, z["ids"])
    started = time.time()
    ids, texts = corpus.searcher.store.chunk_texts(ids)
    vectors = token_vectors(corpus.embedder.load(), texts)
    offs = np.concatenate([[0], np.cumsum([len(v) for v in vectors])])
    T = np.concatenate(vectors)
    print(f"{coll}: {len(ids)} chunks, {len(T)} tokens in {time.time() - started:.0f} s", flush=True)
    np.savez(f, ids=ids, offs=offs, T=T)
    return ids, offs, T


def maxsim(c, q: np.ndarray, ids: np.ndarray, offs: np.ndarray, T: np.ndarray) -> np.ndarray:
    """Per node of the pass, the mean over query tokens of the best cosine to one of the chunk's tokens."""
    r = np.searchsorted(ids, c.nodes)
    starts, lens = offs[r], offs[r + 1] - offs[r]
    firsts = np.cumsum(lens) - lens
    rows = np.repeat(starts, lens) + np.arange(lens.sum()) - np.repeat(firsts, lens)
    sims = T[rows].astype(np.float32) @ q.T.astype(np.float32)  # (all tokens, query tokens)
    best = np.maximum.reduceat(sims, firsts, axis=0)  # per chunk, per query token
    return best.mean(axis=1).astype(np.float64)


def study(specs: list[str]) -> None:
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        coll, corpus, passes, meta, _qv, _p = loaded
        ids, offs, T = chunk_tokens(coll, corpus, passes)
        queries = {c.qid: c.query for c in passes}
        qids = sorted(queries)
        qtok = dict(zip(qids, token_vectors(corpus.embedder.load(), [queries[q] for q in qids])))
        signal = [maxsim(c, qtok[c.qid], ids, offs, T) for c in passes]
        dense_mixes(spec, loaded, base, per_variant, signal, GRID)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
