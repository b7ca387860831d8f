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
are calibrated by the same procedure on TRAIN (scripts/bench/bench_no_match.py --calibrate: scifact and
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

from lab.studies import harness  # noqa: E402
from ragx.search.anchor_signals import anchor_signals  # noqa: E402
from ragx.search.evidence import signals  # noqa: E402

OUT = harness.OUT
THRESHOLDS = OUT / "anchor-evidence-thresholds.json"
RULES = ("chunks", "anchored")  # today's rule; the variant


def _evidence(c, corpus, q: str, vector: np.ndarray) -> tuple[float, float, float]:
    """Chunk cosine evidence, anchored cosine evidence, lexical evidence of one pass."""
    a = corpus.settings.search.anchor_dense
    anchor_sim, _ = anchor_signals(corpus.searcher.store, q, c.file_ids, vector)
    dense, lexical, _ = signals(c)
    qsim = c.qsim.astype(np.float64)
    mixed = (1 - a) * qsim + a * np.fmax(qsim, anchor_sim)  # scoring's dense_signal
    anchored = max(float(np.max(mixed)), 0.0) if len(mixed) else 0.0
    return dense, anchored, lexical


def tables(split: str, data: Path) -> dict[tuple[str, str], np.ndarray]:
    return bench.cached_tables(split, data, OUT / f"anchor-evidence-{split}.npz", _evidence)


def rule_table(table: dict[tuple[str, str], np.ndarray], rule: str) -> dict[tuple[str, str], np.ndarray]:
    """(dense, lexical, share) rows as bench_no_match reads them, under one rule's dense evidence; the
    share (added to the rule later, research/2026-12-04-contrast-evidence.md) at 0, so never enough."""
    col = RULES.index(rule)
    return {k: np.column_stack([v[:, [col, 2]], np.zeros(len(v))]) for k, v in table.items()}


def main(argv: list[str]) -> None:
    split = argv[0]
    data = bench.DATA.resolve()
    table = tables(split, data)
    if split == "train":
        # bench.calibrate's grid was refined with the share (2026-12-04): a re-run may land a step away
        # from the thresholds in this study's note, which came from the earlier grid.
        chosen = {rule: bench.calibrate(rule_table(table, rule), 0.005)[:2] for rule in RULES}
        THRESHOLDS.write_text(json.dumps(chosen, indent=1))
    else:
        chosen = json.loads(THRESHOLDS.read_text())  # the train choice; never re-chosen on test
    for rule in RULES:
        print(f"\n## rule: {rule} (thresholds from train)")
        bench.report(rule_table(table, rule), (*chosen[rule], 1.0))


if __name__ == "__main__":
    main(sys.argv[1:])
