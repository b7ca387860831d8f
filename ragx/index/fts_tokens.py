"""BM25's tokens, defined by SQLite's FTS5 tokenizer itself: one rule for the FTS5 table and the postings.

The FTS5 table (store.py) and ragx's own postings (lexicon.py) must cut text into the very same terms,
or the two BM25 paths rank differently. Re-implementing `porter unicode61 remove_diacritics 2` in
Python comes close but not equal (measured on the shared collections' 58,467 distinct words: PyStemmer's
Porter differs on 147, e.g. "epidemiology", "possibly", "µm"; FTS5 folds µ to μ, keeps Greek accents,
strips Latin ones). So SQLite cuts the text: an in-memory FTS5 table with that tokenizer receives each
DISTINCT white-space separated piece once, and `fts5vocab` ('instance') hands back its terms. A
token never spans white space (every Python white-space character is a separator for unicode61), so a
text's terms are its pieces' terms in order, and a corpus pays SQLite per distinct piece, not per word.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:  # on `ragx status`'s path, which never needs numpy (lazy.py)
    from ..lazy import lazy_module

    np = lazy_module("numpy")

from .identifiers import with_identifier_parts

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
WORDS_REMEMBERED = 50_000  # query words whose terms a process keeps (a long MCP session forgets, then relearns)
BREAK = "\x00"  # between two texts of a joined block (no terms: a control character is a separator)


class PieceTokens:
    """Terms of distinct pieces, from FTS5. One instance serves a process (a lock guards its connection)."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        # Contentless: the pieces are not kept, and 'delete-all' empties the index at once (a DELETE
        # leaves segments and delete markers that every later vocabulary scan walks: 8 ms a query).
        self._db.execute(f"CREATE VIRTUAL TABLE piece USING fts5(x, content='', tokenize='{FTS_TOKENIZER}')")
        self._db.execute("CREATE VIRTUAL TABLE piece_terms USING fts5vocab(piece, 'instance')")
        self._lock = threading.Lock()
        self._words: dict[str, list[str]] = {}  # a query word's terms, remembered (bounded: WORDS_REMEMBERED)

    def of(self, pieces: list[str]) -> tuple[np.ndarray, list[str]]:
        """(index of the piece each term comes from, the terms): every term of every piece, in reading order."""
        with self._lock:
            self._db.execute("BEGIN")  # one transaction for the batch, not one per piece
            # each piece with its identifiers' parts and joined forms (identifiers.py), for documents and queries alike
            self._db.executemany("INSERT INTO piece(rowid, x) VALUES (?, ?)", enumerate(map(with_identifier_parts, pieces)))
            rows = self._db.execute("SELECT doc, offset, term FROM piece_terms").fetchall()
            self._db.execute("INSERT INTO piece(piece) VALUES ('delete-all')")
            self._db.execute("COMMIT")
        if not rows:
            return np.empty(0, np.int64), []
        doc = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        offset = np.fromiter((r[1] for r in rows), np.int64, len(rows))
        order = np.lexsort((offset, doc))
        return doc[order], [rows[i][2] for i in order.tolist()]

    def of_words(self, words: list[str]) -> list[str]:
        """The terms of query words, word by word (a plain word gives one term or none; an identifier its
        parts and its joined form too: identifiers.py)."""
        known = self._words
        new = [w for w in dict.fromkeys(words) if w not in known]
        if new:
            if len(known) + len(new) > WORDS_REMEMBERED:
                known.clear()  # forgotten: every word of this call is learnt again, not only the new ones
                new = list(dict.fromkeys(words))
            piece, terms = self.of(new)
            for w in new:
                known[w] = []
            for p, t in zip(piece.tolist(), terms):
                known[new[p]].append(t)
        return [t for w in words for t in known[w]]


_shared: PieceTokens | None = None


def shared() -> PieceTokens:
    global _shared
    if _shared is None:
        _shared = PieceTokens()
    return _shared
