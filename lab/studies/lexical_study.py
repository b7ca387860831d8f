"""Item 4 (the comparison): ragx's FTS5 lexical leg vs a reference BM25 (bm25s, Lucene variant,
k1 = 0.9, b = 0.4, English Snowball stemming + English stopwords), at file level, and a decomposition
of the gap: unit (whole file vs chunk, a file scoring its best chunk), k1/b (FTS5's bm25() fixes
k1 = 1.2, b = 0.75), stemming, stopwords.

    python -m lab.studies.lexical_study   -> reports/research/lexical-study.{md,json}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from . import data
from .evaluate import measure, per_query
from .protocol import COLLECTIONS
from .tables import markdown

OUT = Path(__file__).resolve().parents[2] / "reports" / "research"
DEPTH = 100


def fold(text: str) -> str:
    """Strip diacritics (NFKD, drop combining marks), as FTS5's unicode61 remove_diacritics does."""
    import unicodedata

    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def _tokenize(texts, stem: bool, stop: bool, folded: bool = False):
    import bm25s
    import Stemmer

    if folded:
        texts = [fold(t) for t in texts]
    return bm25s.tokenize(texts, lower=True, stopwords="en" if stop else None,
                          stemmer=Stemmer.Stemmer("english") if stem else None, show_progress=False)


def bm25_run(units: list[str], unit_files: list[str], queries: dict[str, str], *, k1=0.9, b=0.4, method="lucene",
             stem=True, stop=True, folded=False) -> dict[str, dict[str, float]]:
    """A file-level run: units (files or chunks) scored by bm25s, a file taking its best unit's score."""
    import bm25s

    model = bm25s.BM25(method=method, k1=k1, b=b)
    model.index(_tokenize(units, stem, stop, folded), show_progress=False)
    qids = list(queries)
    qtok = _tokenize([queries[q] for q in qids], stem, stop, folded)
    k = min(len(units), DEPTH * 4)
    docs, scores = model.retrieve(qtok, k=k, show_progress=False, n_threads=1)
    files = np.array(unit_files)
    run = {}
    for i, q in enumerate(qids):
        keep = scores[i] > 0
        f, s = files[docs[i][keep]], scores[i][keep]
        _, first = np.unique(f, return_index=True)   # units come best first: first hit = the file's best
        first = np.sort(first)[:DEPTH]
        run[q] = {str(a): float(v) for a, v in zip(f[first], s[first])}
    return run


def corpus_units(s: data.Split) -> tuple[list[str], list[str], list[str], list[str]]:
    """(file texts, file paths, chunk texts, each chunk's file path)."""
    table = data.chunk_table(s)
    paths = [s.paths[int(f)] for f in table.file_ids]
    files = sorted(set(s.paths.values()))
    texts = [(s.corpus_root / p).read_text(encoding="utf-8", errors="replace") for p in files]
    return texts, files, table.texts, paths


VARIANTS = {  # name -> (unit, k1, b, stem, stop, fold diacritics)
    "ref: file lucene k1=.9 b=.4 stem stop": ("file", 0.9, 0.4, True, True, False),
    "file k1=1.2 b=.75 stem stop": ("file", 1.2, 0.75, True, True, False),
    "file k1=.9 b=.4 no-stem": ("file", 0.9, 0.4, False, True, False),
    "file k1=.9 b=.4 no-stop": ("file", 0.9, 0.4, True, False, False),
    "file k1=.9 b=.4 stem stop fold": ("file", 0.9, 0.4, True, True, True),
    "chunk k1=.9 b=.4 stem stop": ("chunk", 0.9, 0.4, True, True, False),
    "chunk k1=1.2 b=.75 stem stop": ("chunk", 1.2, 0.75, True, True, False),
    "chunk k1=1.2 b=.75 stem stop fold": ("chunk", 1.2, 0.75, True, True, True),
}


def run(collections=COLLECTIONS) -> dict:
    md, results = ["# ragx's lexical leg vs reference BM25 (file level, test queries)", ""], {}
    for coll in collections:
        s = data.load(coll, "test")
        ftexts, fpaths, ctexts, cpaths = corpus_units(s)
        queries = {c.qid: c.query for c in s.passes}
        rows = {"ragx FTS5 (chunk, best chunk per file)": measure(s, lambda c: np.where(c.lexical > 0, c.lexical, -1.0))}
        for name, (unit, k1, b, stem, stop, folded) in VARIANTS.items():
            texts, owners = (ftexts, fpaths) if unit == "file" else (ctexts, cpaths)
            r = bm25_run(texts, owners, queries, k1=k1, b=b, stem=stem, stop=stop, folded=folded)
            rows[name] = per_query(s.qrels, r, s.qids)
        ref = "ref: file lucene k1=.9 b=.4 stem stop"
        md += [f"## {coll} ({len(s.qids)} queries)", "", markdown(rows, ref, "nDCG@10"), ""]
        results[coll] = {n: {m: float(v.mean()) for m, v in vals.items()} for n, vals in rows.items()}
        print(coll, json.dumps({n: round(v["nDCG@10"], 4) for n, v in results[coll].items()}), file=sys.stderr, flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "lexical-study.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (OUT / "lexical-study.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return results


if __name__ == "__main__":
    run(tuple(sys.argv[1:]) or COLLECTIONS)
