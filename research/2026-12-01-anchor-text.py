"""Anchor text (issue 13): what other notes say where they link to a note, as evidence for that note.

A wikilink is usually written inside a sentence that says what the target is about ("run and coordinate
community events like [[Office Hours|community.events.office-hours]]"), and 72% of dendron-vault's
wikilinks carry a label. The ranking study used links only as edges to spread scores along; here the
words around the link become a field of the *target* file, as web search has long used anchor text.

Each in-link occurrence (wikilink or markdown link; transclusions and links inside code fences are
left out, as in ragx/ingest/links.py) gives one context: the line holding the link, every link in it
replaced by its label (or the target's name), at most 300 characters. Per candidate chunk, of the
file it belongs to:

    dense:   qsim' = (1 - a) * qsim + a * max(qsim, best cosine of the query to a context of the file)
    lexical: lex'  = (1 - a) * lex/max + a * max(lex/max, anchor BM25/max), the anchor BM25 over one
             document per file (its contexts), bm25s with the reference ranker's stemmer and stopwords

A file nobody links to keeps its signals exactly. Grid, fixed before running: kind in {d, l, dl} x
a in {0.25, 0.5, 1.0}. The candidates are the shipped defaults' pass (dense 100 + BM25 100 seeds, graph
off), scored with the shipped defaults: equal candidates by construction.

    RAGX_CACHE_DIR=... python research/2026-12-01-anchor-text.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-anchor-text.py study dendron-vault-test scifact-test cranfield-test musique-small-test  # once
    RAGX_CACHE_DIR=... python research/2026-12-01-anchor-text.py compare d0.5 <splits>
    RAGX_CACHE_DIR=... python research/2026-12-01-anchor-text.py pooled d0.5 <four test splits>

Per-query results go to $RAGX_CACHE_DIR/research-prf/anchor-text-results.json.
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace

import numpy as np

from lab.studies import harness
from lab.studies.harness import run_command, studied
from ragx.eval.reference import _stemmer
from ragx.ingest import frontmatter
from ragx.ingest.links import _FENCE, _WIKI, markdown_target, wikilink_target

GRID = tuple(f"{kind}{a}" for kind in ("d", "l", "dl") for a in (0.25, 0.5, 1.0))
RESULTS = harness.OUT / "anchor-text-results.json"
_MD = re.compile(r"(?<!!)\[(?P<label>[^\[\]\n]*)\]\(\s*<?(?P<target>[^()\s<>]+)>?(?:\s+[\"'][^\"'\n]*[\"'])?\s*\)")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")


def _wiki_label(body: str) -> str:
    """`[[label|target]]` -> label; `[[a.b.c-d]]` -> "a b c-d" (Dendron names are dotted paths)."""
    if "|" in body:
        return body.split("|", 1)[0].strip()
    return body.split("#", 1)[0].rsplit("/", 1)[-1].replace(".", " ").strip()


def anchor_contexts(root, paths: dict[int, str]) -> tuple[list[str], np.ndarray]:
    """(context texts, the target file id of each) over every file of the index."""
    file_of = {path: fid for fid, path in paths.items()}
    texts: list[str] = []
    targets: list[int] = []
    for fid, path in paths.items():
        if not path.endswith(".md"):
            continue
        text = (root / path).read_text(encoding="utf-8", errors="replace")
        fm = frontmatter.parse(text)
        body = _FENCE.sub("", text[fm.end:] if fm is not None else text)
        for line in body.splitlines():
            if "[" not in line:
                continue
            found: list[str] = []
            for m in _WIKI.finditer(line):
                target = wikilink_target(m.group("body"))
                if target and not m.group("bang"):
                    found.append(target)
            for m in _MD.finditer(line):
                target = markdown_target(path, m.group("target"))
                if target:
                    found.append(target)
            ids = {file_of[t] for t in found if t in file_of and file_of[t] != fid}
            if not ids:
                continue
            plain = _MD.sub(lambda m: m.group("label"), _WIKI.sub(lambda m: _wiki_label(m.group("body")), line))
            plain = _LIST.sub("", plain).strip()[:300]
            for target_id in sorted(ids):
                texts.append(plain)
                targets.append(target_id)
    return texts, np.array(targets, dtype=np.int64)


class Anchors:
    def __init__(self, corpus):
        paths = corpus.searcher.store.file_paths()
        self.texts, self.targets = anchor_contexts(corpus.root, paths)
        self.n_files = max(paths) + 1
        self.vectors = corpus.embedder.embed_documents(self.texts) if self.texts else np.zeros((0, corpus.embedder.dim), np.float32)
        self.files = np.unique(self.targets)
        self.lexical_model = None
        if len(self.files):
            import bm25s

            self.stemmer = _stemmer()
            docs = [" ".join(self.texts[i] for i in np.flatnonzero(self.targets == f)) for f in self.files]
            tokens = bm25s.tokenize(docs, stopwords="en", stemmer=self.stemmer, show_progress=False)
            self.vocab = tokens.vocab
            self.lexical_model = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
            self.lexical_model.index(tokens, show_progress=False)

    def cosine(self, c, qvec) -> np.ndarray:
        """Per candidate: the best cosine of the query to a context of its file (-inf: no in-links)."""
        best = np.full(self.n_files, -np.inf)
        np.maximum.at(best, self.targets, self.vectors @ qvec)
        return best[c.file_ids]

    def bm25(self, c) -> np.ndarray:
        """Per candidate: the query's BM25 over its file's anchor document (0: none, or no match)."""
        out = np.zeros(self.n_files)
        if self.lexical_model is not None:
            import bm25s

            words = [t for t in bm25s.tokenize([c.query], stopwords="en", stemmer=self.stemmer, return_ids=False,
                                               show_progress=False)[0] if t in self.vocab]
            if words:
                out[self.files] = self.lexical_model.get_scores(words)
        return out[c.file_ids]


def _scaled(x: np.ndarray) -> np.ndarray:
    top = float(np.max(x)) if len(x) else 0.0
    return x / top if top > 0 else np.zeros(len(x))


def variant(c, kind: str, a: float, cos: np.ndarray, bm: np.ndarray):
    out = c
    if "d" in kind:
        out = replace(out, qsim=((1 - a) * c.qsim + a * np.maximum(c.qsim, cos)).astype(np.float32))
    if "l" in kind:
        lex = _scaled(c.lexical)
        out = replace(out, lexical=(1 - a) * lex + a * np.maximum(lex, _scaled(bm)))
    return out


def study(specs: list[str]) -> None:
    for spec, (_coll, corpus, passes, meta, qv, p), base, results in studied(specs, RESULTS):
        anchors = Anchors(corpus)
        linked = sum(int(np.isin(c.file_ids, anchors.files).sum()) for c in passes)
        print(f"{spec}: {len(anchors.texts)} anchor contexts into {len(anchors.files)} files; "
              f"{linked} of {sum(len(c.nodes) for c in passes)} candidates in a linked file", flush=True)
        cos = [anchors.cosine(c, qv[c.qid]) for c in passes]
        bm = [anchors.bm25(c) for c in passes]
        for key in GRID:
            kind, a = key.rstrip("0123456789."), float(key.lstrip("dl"))
            mean, results[key] = harness.ndcg([variant(c, kind, a, x, y) for c, x, y in zip(passes, cos, bm)], p, meta)
            print(f"{spec} {key} {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
