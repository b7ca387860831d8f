"""Anchor text in the "nothing relevant" rule (issue 13, item 5).

The rule (ragx/search/evidence.py) passes a query when the best cosine of the query to any candidate
chunk, or the best BM25 per query term, reaches its threshold. Since anchor text was promoted
(research/2026-12-01-anchor-text.md), the ranking's dense signal of a candidate is
`(1 - a) * cosine + a * max(cosine, best anchor cosine of its file)` (ragx/scoring/score.py
dense_signal, a = anchor_dense = 0.5): what other notes say where they link to a file is evidence for
that file. The rule never looks at it, so a question answered by what the links say is judged on the
chunks' own cosines alone.

The variant: the dense evidence is the best value of the ranking's own dense signal over the pass's
candidates (anchors mixed in exactly as scoring mixes them); the lexical evidence is unchanged (an
anchor document's BM25 has its own corpus statistics, not the chunks' scale). Only a collection with
links can change (of the shared ones: dendron-vault, as the corpus a query runs against). Both rules
are calibrated by the same procedure on TRAIN (scripts/bench_no_match.py --calibrate: scifact and
dendron-vault train queries, real against their own corpus, foreign against the other three corpora;
the pair that rejects the most foreign queries while real ones lose at most 0.5%); the test splits are
then run once with each rule's train thresholds.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-anchor-evidence.py train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-anchor-evidence.py test   # once, after train

Evidence tables are cached in $RAGX_CACHE_DIR/research-prf/anchor-evidence-<split>.npz; the train
thresholds in anchor-evidence-thresholds.json beside them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import bench_no_match as bench  # noqa: E402
from lab.studies.research_scripts import load_script  # noqa: E402
from ragx.api import Corpus  # noqa: E402
from ragx.eval.beir import cache_dir_for, materialise, splits_of  # noqa: E402
from ragx.scoring.candidates import PassCaps  # noqa: E402
from ragx.search.anchor_signals import anchor_signals  # noqa: E402
from ragx.search.evidence import signals  # noqa: E402
from ragx.search.retrieve import retrieval_pass  # noqa: E402

OUT = load_script("2026-12-01-prf-and-sentences.py").OUT
THRESHOLDS = OUT / "anchor-evidence-thresholds.json"
RULES = ("chunks", "anchored")  # today's rule; the variant


def _evidence_on(corpus_dir: Path, query_sets: dict[str, list[str]], vectors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """(n, 3) per query set: chunk cosine evidence, anchored cosine evidence, lexical evidence."""
    corpus = Corpus.open(corpus_dir)
    corpus.index()
    s, p = corpus.searcher, corpus.settings.search
    s.refresh()
    caps = PassCaps(p.dense_n, p.lexical_n, p.hops, p.query_floor)
    a = p.anchor_dense
    out = {}
    for name, queries in query_sets.items():
        rows = []
        for q in queries:
            if q not in vectors:
                vectors[q] = s.embedder.embed_query(q)
            with s.reading() as snap:
                c = retrieval_pass(q, vectors[q][None, :], [q], snap, s.store, caps)
                anchor_sim, _ = anchor_signals(s.store, q, c.file_ids, vectors[q])
            dense, lexical = signals(c)
            qsim = c.qsim.astype(np.float64)
            mixed = (1 - a) * qsim + a * np.fmax(qsim, anchor_sim)  # scoring's dense_signal
            anchored = max(float(np.max(mixed)), 0.0) if len(mixed) else 0.0
            rows.append((dense, anchored, lexical))
        out[name] = np.array(rows, dtype=np.float64).reshape(-1, 3)
    s.close()
    return out


def tables(split: str, data: Path) -> dict[tuple[str, str], np.ndarray]:
    cache = OUT / f"anchor-evidence-{split}.npz"
    if cache.exists():
        z = np.load(cache)
        return {tuple(k.split("|")): z[k] for k in z.files}  # type: ignore[misc]
    corpora = list(bench.COLLECTIONS)
    queries = [n for n in corpora if split in splits_of(data / n)] if split == "train" else corpora
    query_sets = {n: bench._queries(data / n, split) for n in queries}
    vectors: dict[str, np.ndarray] = {}
    out = {}
    for corpus_name in corpora:
        d = data / corpus_name
        for q_name, arr in _evidence_on(materialise(d, cache_dir_for(d), []).corpus_dir, query_sets, vectors).items():
            out[(q_name, corpus_name)] = arr
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez(cache, **{"|".join(k): v for k, v in out.items()})
    return out


def rule_table(table: dict[tuple[str, str], np.ndarray], rule: str) -> dict[tuple[str, str], np.ndarray]:
    """(dense, lexical) pairs as bench_no_match reads them, under one rule's dense evidence."""
    col = RULES.index(rule)
    return {k: v[:, [col, 2]] for k, v in table.items()}


def main(argv: list[str]) -> None:
    split = argv[0]
    data = bench.DATA.resolve()
    table = tables(split, data)
    if split == "train":
        chosen = {rule: bench.calibrate(rule_table(table, rule), 0.005) for rule in RULES}
        THRESHOLDS.write_text(json.dumps(chosen, indent=1))
    else:
        chosen = json.loads(THRESHOLDS.read_text())  # the train choice; never re-chosen on test
    for rule in RULES:
        print(f"\n## rule: {rule} (thresholds from train)")
        bench.report(rule_table(table, rule), *chosen[rule])


if __name__ == "__main__":
    main(sys.argv[1:])
