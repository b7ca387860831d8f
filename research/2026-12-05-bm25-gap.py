"""Why bm25s-Lucene beats ragx's BM25 leg on long natural-language queries: one factor at a time.

ragx's leg (R): FTS5 porter terms of every word, chunks scored (a file takes its best chunk), FTS5's idf,
k1 1.2, b 0.75, query words each once (function words dropped), a stem shared by two words counted twice.
bm25s as `bm25-ref` runs it (L): words of 2+ characters, Lucene's 33 English stop words dropped from
documents and queries, Snowball stems, whole files, Lucene's idf, k1 0.9, b 0.4, every query token counted
(repeats too). Each row swaps one factor of R for L's, or the reverse; nDCG@10 per set on the split given.

    RAGX_CACHE_DIR=<cache> python research/2026-12-05-bm25-gap.py train   # choose
    RAGX_CACHE_DIR=<cache> python research/2026-12-05-bm25-gap.py test    # report
"""

from __future__ import annotations

import json
import os
import pickle
import re
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy import sparse

from ragx.eval.beir import doc_text, read_jsonl, read_qrels
from ragx.index import fts_tokens, identifiers
from ragx.index.fts_tokens import shared
from ragx.ingest.chunk import ChunkSettings, chunk_text
from ragx.scoring import bm25
from ragx.search.lexical import STOPWORDS, bm25_terms, query_words

DATA = Path(os.environ.get("RAGX_DATA", "/work/shared/data"))
SETS = ("scifact", "cranfield", "musique-small", "dendron-vault")
LUCENE_STOP = frozenset("a an and are as at be but by for if in into is it no not of on or such that the their then "
                        "there these they this to was will with".split())
_WORDS = {"fts": re.compile(r"[^\W_]+"), "bm25s": re.compile(r"(?u)\b\w\w+\b")}


@dataclass(frozen=True)
class Setup:
    unit: str = "chunk"          # chunk (a file takes its best chunk) | file
    words: str = "fts"           # fts: FTS5's unicode61 words | bm25s: \w\w+
    stem: str = "porter"         # porter (FTS5's) | snowball (PyStemmer)
    doc_stop: frozenset = frozenset()
    query_stop: frozenset = STOPWORDS
    query_repeats: bool = False  # every query token counted (bm25s) | each word once (ragx)
    variant: str = "fts5"
    k1: float = 1.2
    b: float = 0.75


RAGX = Setup()
REF = Setup("file", "bm25s", "snowball", LUCENE_STOP, LUCENE_STOP, True, "lucene", 0.9, 0.4)


def _stemmer(kind: str):
    if kind == "porter":
        return lambda words: shared().of_words(words)
    import Stemmer

    snowball = Stemmer.Stemmer("english")
    return lambda words: snowball.stemWords(words)


def terms(text: str, s: Setup, stop: frozenset, repeats: bool = True) -> list[str]:
    if s.words in ("pieces", "pieces+ids"):  # ragx's own cut: white-space pieces through FTS5 (query: its words)
        if stop is s.doc_stop:
            return shared().of_words(text.split())
        return bm25_terms(text) if s.words == "pieces+ids" else shared().of_words(query_words(text))
    words = [w for w in _WORDS[s.words].findall(text.lower()) if w not in stop]
    if not repeats:
        words = list(dict.fromkeys(words))
    return _stemmer(s.stem)(words)


def load(name: str) -> tuple[list[str], list[list[str]], dict, dict]:
    """(doc ids, each doc's chunk texts as ragx cuts them, queries, qrels by split), cached."""
    cache = Path("/tmp") / f"bm25gap-{name}.pkl"
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from wordpiece import wordpiece_counter

    counter = wordpiece_counter()
    ids, chunks = [], []
    for d in read_jsonl(DATA / name / "corpus.jsonl"):
        text = doc_text(d.get("title", ""), d.get("text", ""))
        ids.append(str(d["_id"]))
        chunks.append([c.embed_text for c in chunk_text(f"{d['_id']}.md", text.encode(), text, counter, ChunkSettings())])
    queries = {str(q["_id"]): q["text"] for q in read_jsonl(DATA / name / "queries.jsonl")}
    qrels = {p.stem: read_qrels(p) for p in (DATA / name / "qrels").glob("*.tsv")}
    out = (ids, chunks, queries, qrels)
    cache.write_bytes(pickle.dumps(out))
    return out


def matrix(units: list[str], s: Setup) -> tuple[sparse.csc_matrix, dict[str, int]]:
    vocab: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for i, text in enumerate(units):
        for t, n in Counter(terms(text, s, s.doc_stop)).items():
            rows.append(i)
            cols.append(vocab.setdefault(t, len(vocab)))
            vals.append(n)
    return sparse.csc_matrix((vals, (rows, cols)), shape=(len(units), len(vocab)), dtype=np.float64), vocab


def run(name: str, split: str, s: Setup) -> np.ndarray:
    ids, chunks, queries, qrels = load(name)
    if split not in qrels:
        return np.empty(0)
    owner = np.repeat(np.arange(len(ids)), [len(c) for c in chunks])
    units = [t for c in chunks for t in c] if s.unit == "chunk" else ["\n\n".join(c) for c in chunks]
    if s.unit == "file":
        owner = np.arange(len(ids))
    tf, vocab = matrix(units, s)
    length = np.asarray(tf.sum(axis=1)).ravel()
    avgdl, n = length.mean(), len(units)
    df = np.diff(tf.indptr)
    out = []
    for qid, judged in sorted(qrels[split].items()):
        if qid not in queries:
            continue
        score = np.zeros(n)
        for t in terms(queries[qid], s, s.query_stop, s.query_repeats):
            j = vocab.get(t)
            if j is None:
                continue
            lo, hi = tf.indptr[j], tf.indptr[j + 1]
            rows = tf.indices[lo:hi]
            idf = bm25.idf(s.variant, n, int(df[j]))
            score[rows] += bm25.term_scores(s.variant, idf, tf.data[lo:hi], length[rows], avgdl, s.k1, s.b)
        per_file = np.zeros(len(ids))
        np.maximum.at(per_file, owner, score)
        out.append(_ndcg10(per_file, [judged.get(d, 0) for d in ids]))
    return np.array(out)


def _ndcg10(scores: np.ndarray, gains: list[int]) -> float:
    g = np.asarray(gains, dtype=np.float64)
    top = np.lexsort((np.arange(len(scores)), -scores))[:10]
    top = top[scores[top] > 0]
    discount = 1 / np.log2(np.arange(2, 12))
    ideal = np.sort(g)[::-1][:10]
    best = float((ideal * discount[: len(ideal)]).sum())
    return float((g[top] * discount[: len(top)]).sum() / best) if best > 0 else 0.0


ROWS = {
    "R (ragx leg)": RAGX,
    "R + file": replace(RAGX, unit="file"),
    "R + bm25s words": replace(RAGX, words="bm25s"),
    "R + snowball": replace(RAGX, stem="snowball"),
    "R + doc stop (lucene)": replace(RAGX, doc_stop=LUCENE_STOP),
    "R + doc stop (ragx list)": replace(RAGX, doc_stop=STOPWORDS),
    "R + query stop lucene": replace(RAGX, query_stop=LUCENE_STOP),
    "R + query repeats": replace(RAGX, query_repeats=True),
    "R + lucene idf": replace(RAGX, variant="lucene"),
    "R + k1 0.9 b 0.4": replace(RAGX, k1=0.9, b=0.4),
    "L (bm25-ref)": REF,
    "L + chunk": replace(REF, unit="chunk"),
    "L + fts words": replace(REF, words="fts"),
    "L + porter": replace(REF, stem="porter"),
    "L - doc stop": replace(REF, doc_stop=frozenset()),
    "L + query stop ragx": replace(REF, query_stop=STOPWORDS),
    "L - query repeats": replace(REF, query_repeats=False),
    "L + fts5 idf": replace(REF, variant="fts5"),
    "L + k1 1.2 b 0.75": replace(REF, k1=1.2, b=0.75),
}


def identifier_effect(split: str) -> None:
    """Identifier-aware terms (ragx/index/identifiers.py) on prose: ragx's leg with and without them."""
    from ragx.eval.stats import paired

    def with_ids(on: bool) -> dict[str, np.ndarray]:
        fts_tokens._shared = None  # a fresh tokenizer: it remembers the words it has cut
        fts_tokens.with_identifier_parts = identifiers.with_identifier_parts if on else (lambda piece: piece)
        try:
            return {name: run(name, split, replace(RAGX, words="pieces+ids" if on else "pieces")) for name in SETS}
        finally:
            fts_tokens.with_identifier_parts = identifiers.with_identifier_parts
            fts_tokens._shared = None

    before, after = with_ids(False), with_ids(True)
    for name in SETS:
        if len(before[name]):
            c = paired(after[name], before[name])
            print(f"| {name} {split} ({len(before[name])}) | {before[name].mean():.4f} | {after[name].mean():.4f} | "
                  f"{c.diff:+.4f} (p {c.p:.3f}) | {c.wins}/{c.ties}/{c.losses} |")


def main(split: str) -> None:
    from ragx.eval.stats import paired

    results = {}
    for label, setup in ROWS.items():
        results[label] = {name: run(name, split, setup) for name in SETS}
    base = results["R (ragx leg)"]
    print(f"| {split} | " + " | ".join(f"{n} ({len(base[n])})" for n in SETS if len(base[n])) + " |")
    for label, per in results.items():
        cells = []
        for name in SETS:
            if not len(per[name]):
                continue
            test = paired(per[name], base[name])
            cells.append(f"{per[name].mean():.4f} ({per[name].mean() - base[name].mean():+.4f}, p {test.p:.3f})")
        print(f"| {label} | " + " | ".join(cells) + " |")
    Path(f"/tmp/bm25gap-{split}.json").write_text(json.dumps({k: {n: v.tolist() for n, v in r.items()} for k, r in results.items()}))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "identifiers":
        identifier_effect(sys.argv[1])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "train")
