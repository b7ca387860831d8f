"""A tiny deterministic embedder for fast tests: hashed bag of words, unit length.

Texts that share words are similar, so graphs and rankings have real structure, but nothing loads a
model. It implements the same Embedder and TokenCounter protocols as the real engines.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from pathlib import Path

import numpy as np

WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class WordCounter:
    def __init__(self, max_content_tokens: int = 62):
        self.max_content_tokens = max_content_tokens

    def token_offsets(self, text: str) -> np.ndarray:
        spans = [(m.start(), m.end()) for m in WORD.finditer(text)]
        return np.array(spans, dtype=np.int64).reshape(-1, 2)

    def count(self, texts: list[str]) -> np.ndarray:
        return np.array([len(WORD.findall(t)) for t in texts], dtype=np.int64)


class HashEmbedder:
    def __init__(self, dim: int = 64, name: str = "test:hash-64", max_content_tokens: int = 62):
        self.dim = dim
        self.name = name
        self.max_tokens = max_content_tokens + 2
        self._counter = WordCounter(max_content_tokens)
        self.embedded: list[str] = []  # every document text embedded, to check incrementality

    def token_counter(self) -> WordCounter:
        return self._counter

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(w.encode()) % self.dim] += 1.0
        v[zlib.crc32(b"__bias__") % self.dim] += 0.25  # empty texts still get a unit vector
        return v / np.linalg.norm(v)

    def embed_documents(self, texts, batch_size: int = 32, progress=None) -> np.ndarray:
        self.embedded.extend(texts)
        out = np.stack([self._one(t) for t in texts]) if len(texts) else np.empty((0, self.dim), np.float32)
        if progress:
            progress(len(texts))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


TOPICS = {
    "astronomy": "stars galaxies telescope orbit planet comet nebula light years cosmic",
    "cooking": "flour butter oven bake bread recipe sugar dough yeast kitchen",
    "sailing": "boat wind sail harbour keel mast rope anchor tide knot",
}


def make_corpus(root: Path, n_per_topic: int = 6) -> None:
    # Random word choices: no two chunks are the same bag of words, so no similarity ties
    # (ties would be broken by chunk id, which differs between incremental and full runs).
    rng = random.Random(7)
    for topic, words in TOPICS.items():
        w = words.split()
        for i in range(n_per_topic):
            body = "\n\n".join(f"## Part {p}\n\n" + " ".join(rng.choice(w) for _ in range(40)) for p in range(3))
            (root / f"{topic}-{i}.md").write_text(f"# {topic} {i}\n\n{body}\n", encoding="utf-8")
    (root / "notes.txt").write_text("A plain text note about bread and the oven.\n", encoding="utf-8")


def make_indexed_corpus(root: Path) -> Path:
    """`make_corpus` under `root`, indexed in full with the hash embedder; `root` back."""
    from ragx.config import load_settings
    from ragx.index.build import run_index

    root.mkdir(parents=True, exist_ok=True)
    make_corpus(root)
    run_index(root, load_settings(root), HashEmbedder())
    return root


def beir_folder(path: Path, words: dict[str, str]) -> Path:
    """A BEIR folder (corpus, queries, qrels/test.tsv): one document per word list, one query per document
    made of its first two words."""
    (path / "qrels").mkdir(parents=True)
    (path / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": k, "title": k, "text": v}) for k, v in words.items()) + "\n")
    queries = [{"_id": f"q{i}", "text": v.split()[0] + " " + v.split()[1]} for i, v in enumerate(words.values())]
    (path / "queries.jsonl").write_text("\n".join(json.dumps(x) for x in queries) + "\n")
    qrels = "".join(f"q{i}\t{k}\t1\n" for i, k in enumerate(words))
    (path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return path


def indexed_topic_corpus(tmp_path: Path, n_per_topic: int, queries: dict[str, list[str]]):
    """A topic corpus indexed with the hash embedder, and labelled queries ({query text: relevant
    files}, ids q0, q1, ...): (Corpus, [LabelledQuery])."""
    from ragx.api import Corpus
    from ragx.config import load_settings
    from ragx.eval.queries import load_queries
    from ragx.index.build import run_index

    root = tmp_path / "corpus"
    root.mkdir()
    make_corpus(root, n_per_topic=n_per_topic)
    run_index(root, load_settings(root), HashEmbedder())
    qfile = tmp_path / "q.jsonl"
    rows = [{"id": f"q{i}", "query": text, "relevant_files": files} for i, (text, files) in enumerate(queries.items())]
    qfile.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return Corpus(root), load_queries(qfile)


def add_fts5_table(db) -> None:
    """The FTS5 table ragx kept beside every index before its own BM25 postings (external content over
    `chunks`, each chunk's frontmatter header + text), filled as that writer left it: for tests of
    indexes written then, which BM25 reads through it until the next index run."""
    from ragx.index.fts_tokens import FTS_TOKENIZER
    from ragx.index.store import INDEXED_TEXT_SQL

    db.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id', tokenize='{FTS_TOKENIZER}')")
    db.execute(f"INSERT INTO chunks_fts(rowid, text) SELECT c.id, {INDEXED_TEXT_SQL} FROM chunks c")
