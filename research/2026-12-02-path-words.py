"""Path words (issue 13): the words of a note's file path as evidence for its chunks.

Notes vaults name files by what they are about, and often by hierarchy: Dendron's dotted names
(`dendron.topic.publish.quickstart`), folders elsewhere (`projects/website/publishing.md`). A note's
frontmatter title often keeps only the last level ("Quickstart"), and a chunk's text rarely repeats the
levels above, so a question about publishing may not find "publish" in the quickstart's chunks at all.
Here the path's words become a field of the file, mixed in as the anchors are (ragx/scoring/score.py):

    dense:   qsim' = (1 - a) * qsim + a * max(qsim, cosine of the query to the path phrase)
    lexical: lex'  = (1 - a) * lex/max + a * max(lex/max, path BM25/max), BM25 over one document per
             file (its path words, FTS5's terms; k1 1.2, b 0.75)

Path words: the path without its extension, cut at `/ . _ -`, spaces, camelCase humps and letter-digit
boundaries (`mu12` -> `mu`, `12`); a word of digits only, of one character, or found in more than 10%
of the corpus's files ("dendron", "topic"; "mu" in every MuSiQue file) is dropped. SciFact's and Cranfield's files are named by number, so they
have no path words and are unchanged by construction. Grid, fixed before running: kind in {d, l, dl} x
a in {0.25, 0.5, 1.0}. Candidates: the shipped defaults' cached pass (dense 100 + BM25 100 seeds,
graph off), scored with the shipped defaults (anchors included): equal candidates by construction.
Chosen on TRAIN by the mean gain over dendron-vault train and SciFact train; test sets run once.

    RAGX_CACHE_DIR=... python research/2026-12-02-path-words.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-02-path-words.py study --only l0.25 dendron-vault-test scifact-test cranfield-test musique-small-test  # once, the train choice
    RAGX_CACHE_DIR=... python research/2026-12-02-path-words.py compare dl0.5 <splits>
    RAGX_CACHE_DIR=... python research/2026-12-02-path-words.py pooled dl0.5 <four test splits>

Per-query results go to $RAGX_CACHE_DIR/research-prf/path-words-results.json.
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied
from lab.studies.research_scripts import load_script

anchor_study = load_script("2026-12-01-anchor-text.py")

from ragx.index.fts_tokens import shared  # noqa: E402
from ragx.search.lexical import query_words  # noqa: E402

GRID = anchor_study.GRID  # the anchor study's: the same two mixes, the same weights
RESULTS = harness.OUT / "path-words-results.json"
COMMON = 0.10  # a path word in more than this share of the files says nothing about one of them
K1, B = 1.2, 0.75
_CUT = re.compile(r"[/._\-\s]+")
_HUMP = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")


def path_words(path: str) -> list[str]:
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    words = [w for part in _CUT.split(stem) for w in _HUMP.split(part)]
    return [w.lower() for w in words if len(w) > 1 and not w.isdigit()]


class PathField:
    """Per file: its path words (common ones dropped), the phrase they make, and BM25 over them."""

    def __init__(self, paths: dict[int, str]):
        self.files = np.array(sorted(paths), dtype=np.int64)
        words = [path_words(paths[f]) for f in self.files.tolist()]
        df: dict[str, int] = {}
        for ws in words:
            for w in set(ws):
                df[w] = df.get(w, 0) + 1
        limit = COMMON * len(words)
        self.words = [[w for w in ws if df[w] <= limit] for ws in words]
        self.phrases = [" ".join(ws) for ws in self.words]
        self.terms = [shared().of_words(ws) for ws in self.words]
        n = len(self.terms)
        tdf: dict[str, int] = {}
        for ts in self.terms:
            for t in set(ts):
                tdf[t] = tdf.get(t, 0) + 1
        self.idf = {t: max(np.log((n - d + 0.5) / (d + 0.5)), 1e-6) for t, d in tdf.items()}
        self.length = np.array([len(ts) for ts in self.terms], dtype=np.float64)
        self.avgdl = float(self.length.mean()) or 1.0

    def bm25(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.files))
        for t in dict.fromkeys(shared().of_words(query_words(query))):
            idf = self.idf.get(t)
            if idf is None:
                continue
            tf = np.array([ts.count(t) for ts in self.terms], dtype=np.float64)
            out += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.length / self.avgdl))
        return out

    def vectors(self, embedder) -> np.ndarray:
        """Unit vector of each file's path phrase (zeros: no path words)."""
        out = np.zeros((len(self.files), embedder.dim), dtype=np.float32)
        have = [i for i, p in enumerate(self.phrases) if p]
        if have:
            out[have] = embedder.embed_documents([self.phrases[i] for i in have], batch_size=32)
        return out


def _scaled(x: np.ndarray) -> np.ndarray:
    top = float(np.max(x)) if len(x) else 0.0
    return x / top if top > 0 else np.zeros(len(x))


def study(specs: list[str], grid: tuple[str, ...] = GRID) -> None:
    for spec, (_coll, corpus, passes, meta, qv, p), base, results in studied(specs, RESULTS):
        field = PathField(meta["paths"])
        vectors = field.vectors(corpus.embedder)
        has = np.array([bool(ph) for ph in field.phrases])
        print(f"{spec}: {int(has.sum())} of {len(has)} files have path words", flush=True)
        dense, lexical = [], []
        for c in passes:
            at = np.searchsorted(field.files, c.file_ids)
            cos = np.where(has[at], vectors[at] @ qv[c.qid].astype(np.float32), -np.inf)
            dense.append(np.fmax(c.qsim, cos).astype(np.float32))
            lexical.append(field.bm25(c.query)[at])
        for key in grid:
            kind, a = key.rstrip("0123456789."), float(key.lstrip("dl"))
            variant = []
            for c, d, lx in zip(passes, dense, lexical):
                v = c
                if "d" in kind:
                    v = replace(v, qsim=((1 - a) * c.qsim + a * d).astype(np.float32))
                if "l" in kind:
                    scaled = _scaled(c.lexical)
                    v = replace(v, lexical=(1 - a) * scaled + a * np.maximum(scaled, _scaled(lx)))
                variant.append(v)
            mean, results[key] = harness.ndcg(variant, p, meta)
            print(f"{spec} {key} {mean:.4f} ({mean - base:+.4f})", flush=True)


def _study_command(argv: list[str]) -> None:
    """`study [--only KEY] SPEC...`: a test split is run with the train choice only."""
    args = argv[1:]
    if args[:1] == ["--only"]:
        study(args[2:], (args[1],))
    else:
        study(args)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, _study_command)
