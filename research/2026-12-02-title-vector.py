"""A document's title as its own dense evidence (issue 13).

A title says in a line what its document is about, often in the words a question would use (a
SciFact title is close to a claim; a note's title is what its reader calls it). Today a title is part
of the first chunk's text (a `# heading`) or of every chunk's frontmatter header, embedded among up to
200 tokens of body. The variant embeds each file's title alone (first-line `# heading`, else the
frontmatter `title:`, as research/2026-12-01-title-mentions.py finds it) and mixes its cosine to the
query into every candidate chunk of that file:

    dense signal = (1 - a) * chunk cosine + a * title cosine       (a file without a title: unchanged)

Everything else is the shipped defaults' scoring of the same cached pass (dense 100 + BM25 100 seeds,
graph off): equal candidates by construction. Grid fixed before running: a in (0.1, 0.2, 0.3). Chosen
on TRAIN (dendron-vault train, SciFact train) by the mean gain, only if positive; then the four test
splits once.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-title-vector.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-title-vector.py study <four test specs>   # once, after choosing
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-title-vector.py compare a0.1 <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-title-vector.py pooled a0.1 <four test specs>

Per-query results go to $RAGX_CACHE_DIR/research-prf/title-vector-results.json.
"""

from __future__ import annotations

import sys

import numpy as np

from lab.studies import harness
from lab.studies.harness import dense_mixes, run_command, studied
from lab.studies.research_scripts import load_script

mentions_study = load_script("2026-12-01-title-mentions.py")
GRID = (0.1, 0.2, 0.3)
RESULTS = harness.OUT / "title-vector-results.json"


def title_cosines(corpus, passes, qv) -> list[np.ndarray]:
    """Per pass, each candidate's title cosine to the query (its own cosine where its file has no title)."""
    paths = corpus.searcher.store.file_paths()
    titles = {}
    for f, path in paths.items():
        title = mentions_study.title_of((corpus.root / path).read_text(encoding="utf-8", errors="replace"))
        if title:
            titles[f] = title
    files = np.array(sorted(titles), dtype=np.int64)
    vectors = corpus.embedder.embed_documents([titles[f] for f in files.tolist()])
    print(f"{len(files)} titles of {len(paths)} files", flush=True)
    out = []
    for c in passes:
        pos = np.searchsorted(files, c.file_ids)
        has = (pos < len(files)) & (files[np.minimum(pos, len(files) - 1)] == c.file_ids)
        cos = c.qsim.astype(np.float64).copy()
        cos[has] = vectors[pos[has]] @ qv[c.qid]
        out.append(cos)
    return out


def study(specs: list[str]) -> None:
    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        _coll, corpus, passes, _meta, qv, _p = loaded
        dense_mixes(spec, loaded, base, per_variant, title_cosines(corpus, passes, qv), GRID)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
