"""The field's reference lexical ranker, over the very files ragx indexed: BM25 from `bm25s`.

Lucene's BM25 variant, English stopwords and the Snowball English stemmer (PyStemmer); it ranks whole
files directly (no chunks, no fusion), so ragx's own lexical leg (FTS5 BM25 over chunks, a file scored
by its best chunk) can be checked against it on every dataset. Files are read from disk as they are
now; `ragx eval beir` has just indexed them, so they are the indexed text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .presets import ReferenceBM25


def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


class ReferenceIndex:
    def __init__(self, root: Path, paths: list[str]):
        import bm25s

        paths = sorted(paths)
        self.paths = np.array(paths, dtype=object)
        self._stemmer = _stemmer()
        texts = [(Path(root) / p).read_text(encoding="utf-8", errors="replace") for p in paths]
        self._corpus = bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer, show_progress=False)

    def rank(self, queries: list[str], cfg: ReferenceBM25, depth: int) -> list[tuple[dict[str, float], int]]:
        """Per query: (the top `depth` files that match at least one term -> score, how many match)."""
        import bm25s

        model = bm25s.BM25(method="lucene", k1=cfg.k1, b=cfg.b)
        model.index(self._corpus, show_progress=False)
        vocab = self._corpus.vocab
        out: list[tuple[dict[str, float], int]] = []
        for tokens in bm25s.tokenize(queries, stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False):
            known = [t for t in tokens if t in vocab]
            if not known:
                out.append(({}, 0))
                continue
            scores = np.asarray(model.get_scores(known), dtype=np.float64)
            matched = np.flatnonzero(scores > 0)
            # Best first; equal scores by path (`paths` is sorted), never by the library's tie-breaking.
            top = matched[np.lexsort((matched, -scores[matched]))][:depth]
            out.append(({str(self.paths[i]): float(scores[i]) for i in top}, int(len(matched))))
        return out
