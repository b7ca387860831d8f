"""Does `ragx eval` catch a broken scoring change, and leave a no-op alone? On real data.

    python scripts/check/eval_sanity.py DATA_DIR [--split test]

Runs the real `ragx eval beir` with three extra configurations next to the reference `hybrid`:
`same` (identical to it: a no-op change), `reversed` (every score's sign flipped: the ranking
upside down) and `swap12` (the first two chunks of every ranking swapped: a subtle change, which may
or may not matter on a dataset). The broken scoring is patched into the eval runner for those
configurations only (recognised by an rrf_k nobody uses), then the harness's own verdicts are
printed: `reversed` must come out significantly worse, `same` not significant with p = 1 and only ties.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys

from ragx.cli.main import run
from ragx.eval import runner
from ragx.scoring.score import Ranking

REVERSED, SWAP12 = 77.0, 78.0


def broken_score(real):
    def score(c, p):
        r = real(c, p)
        if p.rrf_k == REVERSED:
            return Ranking(r.order[::-1].copy(), -r.score, r.fused, r.trace, r.reranked)
        if p.rrf_k == SWAP12 and len(r.order) > 1:
            order, s = r.order.copy(), r.score.copy()
            order[[0, 1]] = order[[1, 0]]
            s[order[0]], s[order[1]] = s[order[1]], s[order[0]]
            return Ranking(order, s, r.fused, r.trace, r.reranked)
        return r

    return score


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("--split", default="test")
    args = ap.parse_args()
    runner.score = broken_score(runner.score)
    argv = ["eval", "beir", args.data_dir, "--split", args.split, "--json", "-c", "hybrid", "-c", "same=hybrid",
            "-c", f"reversed=hybrid,rrf_k={REVERSED}", "-c", f"swap12=hybrid,rrf_k={SWAP12}"]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.suppress(SystemExit):
        run(argv)
    doc = json.loads(stdout.getvalue())["datasets"][0]
    print(f"{doc['dataset']} {doc['split']}, {doc['n_queries']} queries, against {doc['comparisons']['reference']}:")
    for name, by_metric in doc["comparisons"]["configs"].items():
        for metric in ("nDCG@10", "R@10", "MRR@10"):
            c = by_metric[metric]
            verdict = ("significantly " + ("better" if c["diff"] > 0 else "worse")) if c["significant"] else "not significant"
            print(f"  {name:9s} {metric:8s} {c['diff']:+.4f} [{c['ci'][0]:+.4f}, {c['ci'][1]:+.4f}] p {c['p']:.4f} "
                  f"p(BH) {c['p_adjusted']:.4f} W/T/L {c['wins']}/{c['ties']}/{c['losses']}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
