#!/usr/bin/env python
"""The swe-loc summary: `ragx eval snapshots --json` documents (e.g. one train run, one test run at the same
commit) joined into reports/swe-loc.json and reports/swe-loc.md.

    python scripts/tools/swe_loc_report.py TRAIN.json TEST.json --out reports/swe-loc [--note "load ..."]

Per repository, pooled per split and pooled over all: every configuration's Acc@1/5/10 and MRR, each set
against the default (paired randomization test over the instances, Benjamini-Hochberg across the
configurations per metric: ragx/eval/compare.py, the harness's own), the goals of issue 43, and every
replay step (tree changes, index seconds, chunks the step asked to embed, how many of those the
text-keyed vector cache held, chunks reused).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ragx.eval.compare import compare_all
from ragx.eval.metrics import CODE_HEADLINE
from ragx.eval.report import markdown_table
from ragx.eval.snapshot_run import pool

DEFAULT = "default"


def joined(paths: list[Path]) -> dict[str, Any]:
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    commits = sorted({d["commit"] for d in docs})
    repos = [r for d in docs for r in d["repositories"]]
    groups = list(repos)
    for split in ("train", "test"):
        members = [r for r in repos if r["split"] == split]
        if members:
            groups.append(_pooled(f"pooled {split}", split, members))
    if len({r["split"] for r in repos}) > 1:
        groups.append(_pooled("pooled all", "all", repos))
    for g in groups[len(repos):]:
        g.pop("top_files", None)  # the repositories' documents keep them; the pooled ones would repeat them
    for g in groups:
        found = compare_all(g["files"]["per_query"], DEFAULT, CODE_HEADLINE)
        g["against_default"] = {c: {m: x.to_json() for m, x in row.items()} for c, row in found.items()}
    steps = {repo: s for d in docs for repo, s in d["steps"].items()}
    return {"commands": [d["command"] for d in docs], "commits": commits, "groups": groups, "steps": steps}


def _pooled(name: str, split: str, members: list[dict[str, Any]]) -> dict[str, Any]:
    doc = pool(name, split, members, None)
    n = sum(m["n_queries"] for m in members)
    for cfg, b in doc["budgets"].items():  # instance-weighted, not the mean of the repositories' means
        b["candidates"] = sum(m["budgets"][cfg]["candidates"] * m["n_queries"] for m in members) / n
        b["files"] = sum(m["budgets"][cfg]["files"] * m["n_queries"] for m in members) / n
    return doc


def _cell(g: dict[str, Any], cfg: str, m: str) -> str:
    value = g["files"]["means"][cfg][m]
    if cfg == DEFAULT:
        return f"**{value:.3f}**"
    c = g["against_default"][cfg][m]
    star = "*" if c["significant"] else ""
    return f"{value:.3f} ({c['diff']:+.3f}, p {c['p']:.4f}{star})"


def group_table(g: dict[str, Any]) -> str:
    rows = [[cfg, f"{g['budgets'][cfg]['candidates']:.1f}", *(_cell(g, cfg, m) for m in CODE_HEADLINE)]
            for cfg in g["files"]["means"]]
    return markdown_table(["config", "cand.", *CODE_HEADLINE], rows)


def goals(groups: list[dict[str, Any]]) -> list[str]:
    by = {g["dataset"]: g for g in groups}
    out = []
    test = next((g for g in groups if g["split"] == "test" and not g["dataset"].startswith("pooled")), None)
    if test:
        m = test["files"]["means"]
        c = test["against_default"]["bm25-ref"]["Acc@5"]
        out.append(f"- test repository {test['dataset']}: default Acc@5 {m[DEFAULT]['Acc@5']:.3f} (goal >= 0.75: "
                   f"{'met' if m[DEFAULT]['Acc@5'] >= 0.75 else 'NOT met'}); bm25-ref {m['bm25-ref']['Acc@5']:.3f}, "
                   f"default - bm25-ref = {-c['diff']:+.3f} (goal >= +0.10: {'met' if -c['diff'] >= 0.10 else 'NOT met'}; "
                   f"paired p {c['p']:.4f}, W/T/L of bm25-ref {c['wins']}/{c['ties']}/{c['losses']})")
    if "pooled all" in by:
        acc = by["pooled all"]["files"]["means"][DEFAULT]["Acc@5"]
        out.append(f"- pooled over all four: default Acc@5 {acc:.3f} (goal >= 0.80: {'met' if acc >= 0.80 else 'NOT met'})")
    return out


def step_rows(steps: dict[str, list[dict[str, Any]]]) -> list[list[str]]:
    rows = []
    for items in steps.values():
        for s in items:
            t, x = s["tree"], s["index"]
            rows.append([s["instance"] + (" (first index)" if s["fresh"] else ""), f"{t['added']}/{t['modified']}/{t['deleted']}",
                         f"{x['seconds']:.1f}", f"{x['embed_seconds']:.1f}", str(x["files"]), str(x["chunks"]),
                         str(x["embedded_chunks"]), str(s["vectors_from_cache"]), str(x["reused_chunks"])])
    return rows


def markdown(doc: dict[str, Any], note: str) -> str:
    lines = ["# swe-loc: file localisation on real issues (issue 43)", "",
             *(f"- `{c}`" for c in doc["commands"]), f"- commit(s): {', '.join(doc['commits'])}", f"- {note}" if note else "", "",
             "## Goals", "", *goals(doc["groups"]), "",
             "## Per repository and pooled", "",
             "Each cell: mean (config - default, paired randomization p over the instances; * = significant after "
             "Benjamini-Hochberg across the configurations). cand.: chunks scored per instance (files for bm25-ref). "
             "Every configuration carries the shipped priors unless its name says noprior; `hybrid` is the plain hybrid "
             "at the graph preset's (equal) budget, `default-wide` 200 + 200 seeds, `default-fcN` a file scoring its best N chunks.", ""]
    for g in doc["groups"]:
        lines += [f"### {g['dataset']} ({g['split']}, {g['n_queries']} instances)", "", group_table(g), ""]
    lines += ["## Replay steps", "",
              "Each instance's tree, then the incremental index. embedded: chunks the step asked to embed (what a user's "
              "incremental run embeds); cached: of those, how many the text-keyed vector cache of earlier replays held "
              "(so index seconds are not cold embedding times); reused: chunks whose vectors the index already had.", "",
              markdown_table(["instance", "tree +/~/-", "index s", "embed s", "files", "chunks", "embedded", "cached", "reused"],
                             step_rows(doc["steps"])), ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("docs", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, required=True, help="path stem: writes STEM.json and STEM.md")
    ap.add_argument("--note", default="", help="a line on the conditions (load average, caches)")
    args = ap.parse_args()
    doc = joined(args.docs)
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(doc, args.note), encoding="utf-8")
    print("\n".join(goals(doc["groups"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
