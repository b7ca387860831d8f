"""Unlinked mentions as anchors (issue 13): a sentence that names another document's title says
something about that document, link or no link.

Anchor texts (research/2026-12-01-anchor-text.md, now in the defaults) act only where authors link, and
three of the four shared collections have no links. But documents name each other: a MuSiQue paragraph
about a journal names the society that publishes it, whose own paragraph is the next hop of a
multi-hop question; a note mentions another note's title without brackets (Obsidian calls these
"unlinked mentions"). Here every occurrence of a document's title in another document (case-sensitive,
on word boundaries, titles of at least `w` words) becomes an anchor of that document: the sentence
around the mention, at most 300 characters.

Titles: a markdown file's first-line `# heading` (the BEIR collections), else its frontmatter `title:`.
The variant recomputes the anchor signals of every candidate from the explicit anchors (links, as the
product extracts them) plus the mentions, with the study's own scorer (anchor-text study: best cosine
of the query to an anchor of the file; bm25s over one anchor document per file); the reference
recomputes them from the explicit anchors alone with the same scorer. Both are scored with the shipped
defaults (anchor_dense = anchor_lexical = 0.5), over the same cached pass (dense 100 + BM25 100 seeds):
equal candidates. Grid fixed before running: w in {1, 2, 3}.

    RAGX_CACHE_DIR=... python research/2026-12-01-title-mentions.py study dendron-vault-train scifact-train
    RAGX_CACHE_DIR=... python research/2026-12-01-title-mentions.py study dendron-vault-test scifact-test cranfield-test musique-small-test
    RAGX_CACHE_DIR=... python research/2026-12-01-title-mentions.py compare w2 <splits>
    RAGX_CACHE_DIR=... python research/2026-12-01-title-mentions.py pooled w2 <four test splits>

Per-query results go to $RAGX_CACHE_DIR/research-prf/title-mentions-results.json ("base" there is the
explicit-anchors reference, not the defaults' own figure; it is printed beside it).
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

from ragx.ingest import frontmatter  # noqa: E402
from ragx.ingest.anchors import extract as explicit_anchors  # noqa: E402

GRID = (1, 2, 3)
RESULTS = harness.OUT / "title-mentions-results.json"
_HEADING = re.compile(r"\A#\s+(.+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")


def title_of(text: str) -> str | None:
    m = _HEADING.match(text)
    if m:
        return m.group(1).strip()
    fm = frontmatter.parse(text)
    return fm.title.strip() if fm is not None and getattr(fm, "title", None) else None


def mentions(texts: dict[int, str], titles: dict[int, str], min_words: int) -> tuple[list[str], list[int]]:
    """(context, target file id) of every mention of a title (>= min_words words) in another file: the
    title's words in a row inside one sentence (case-sensitive; punctuation between words ignored)."""
    first: dict[str, list[tuple[tuple[str, ...], list[int]]]] = {}
    by_words: dict[tuple[str, ...], list[int]] = {}
    for fid, t in titles.items():
        words = tuple(_WORD.findall(t))
        if len(words) >= min_words and len(t) >= 4 and not t.isdigit():
            by_words.setdefault(words, []).append(fid)
    for words, fids in by_words.items():
        first.setdefault(words[0], []).append((words, fids))
    contexts: list[str] = []
    targets: list[int] = []
    for fid, text in texts.items():
        body = text.split("\n", 1)[1] if _HEADING.match(text) and "\n" in text else text  # not its own title line
        for para in body.split("\n"):
            for sentence in _SENTENCE_END.split(para):
                words = _WORD.findall(sentence)
                hit: set[int] = set()
                for i, w in enumerate(words):
                    for title_words, fids in first.get(w, ()):
                        if tuple(words[i : i + len(title_words)]) == title_words:
                            hit.update(f for f in fids if f != fid)
                for target in sorted(hit):
                    contexts.append(sentence.strip()[:300])
                    targets.append(target)
    return contexts, targets


class Mixed(anchor_study.Anchors):
    """The anchor-text study's scorer over given contexts (explicit anchors, and mentions)."""

    def __init__(self, corpus, texts: list[str], targets: list[int]):
        import bm25s

        paths = corpus.searcher.store.file_paths()
        self.texts, self.targets = texts, np.array(targets, dtype=np.int64)
        self.n_files = max(paths) + 1
        self.vectors = corpus.embedder.embed_documents(texts) if texts else np.zeros((0, corpus.embedder.dim), np.float32)
        self.files = np.unique(self.targets)
        self.lexical_model = None
        if len(self.files):
            self.stemmer = anchor_study._stemmer()
            order = np.argsort(self.targets, kind="stable")
            bounds = np.flatnonzero(np.r_[True, self.targets[order][1:] != self.targets[order][:-1], True])
            docs = [" ".join(texts[i] for i in order[s:e]) for s, e in zip(bounds[:-1], bounds[1:])]
            tokens = bm25s.tokenize(docs, stopwords="en", stemmer=self.stemmer, show_progress=False)
            self.vocab = tokens.vocab
            self.lexical_model = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
            self.lexical_model.index(tokens, show_progress=False)


def _explicit(corpus, texts: dict[int, str], paths: dict[int, str]) -> tuple[list[str], list[int]]:
    """The product's anchors (links), resolved by path or file name as the product resolves them."""
    by_path = {p: f for f, p in paths.items()}
    by_name: dict[str, list[int]] = {}
    for f, p in paths.items():
        by_name.setdefault(p.rsplit("/", 1)[-1], []).append(f)
    out_t, out_f = [], []
    for fid, text in texts.items():
        if not paths[fid].endswith(".md"):
            continue
        for kind, target, context in explicit_anchors(paths[fid], text):
            found = {by_path[target]} if target in by_path else set()
            if kind == "wikilink":
                found |= set(by_name.get(target, []))
            for f in sorted(found - {fid}):
                out_t.append(context)
                out_f.append(f)
    return out_t, out_f


def _scored(passes, qv, anchors) -> list:
    """The passes with their anchor signals recomputed from `anchors`."""
    out = []
    for c in passes:
        cos = anchors.cosine(c, qv[c.qid])
        out.append(replace(c, anchor_sim=np.where(np.isfinite(cos), cos, np.nan).astype(np.float32), anchor_lexical=anchors.bm25(c)))
    return out


def study(specs: list[str]) -> None:
    for spec, loaded, defaults_value, per_variant in studied(specs, RESULTS):
        _coll, corpus, passes, meta, qv, p = loaded
        paths = corpus.searcher.store.file_paths()
        texts = {f: (corpus.root / path).read_text(encoding="utf-8", errors="replace") for f, path in paths.items()}
        titles = {f: t for f, t in ((f, title_of(x)) for f, x in texts.items()) if t}
        ex_t, ex_f = _explicit(corpus, texts, paths)

        reference = _scored(passes, qv, Mixed(corpus, ex_t, ex_f))
        base, per_variant["base"] = harness.ndcg(reference, p, meta)
        print(f"{spec}: {len(titles)} titles, {len(ex_t)} explicit anchors; explicit-only reference {base:.4f} "
              f"(the defaults' own FTS5 anchors: {defaults_value:.4f})", flush=True)
        for w in GRID:
            m_t, m_f = mentions(texts, titles, w)
            mean, per_variant[f"w{w}"] = harness.ndcg(_scored(passes, qv, Mixed(corpus, ex_t + m_t, ex_f + m_f)), p, meta)
            print(f"{spec} w{w}: {len(m_t)} mentions, {mean:.4f} ({mean - base:+.4f})", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
