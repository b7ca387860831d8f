"""Markdown reports: `<dataset>-<split>.md` per dataset and, for a multi-dataset run, `summary-<split>.md`,
each with its plot of differences against the reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .gap import gap_head, gap_rows, has_gap
from .kinds import kind_rows
from .metrics import HEADLINE, METRIC_NAMES
from .plots import dataset_plot, summary_plot
from .report import (
    LEGEND,
    comparison_head,
    comparison_rows,
    lexical_lines,
    main_head,
    main_rows,
    markdown_table,
    summary_head,
    summary_rows,
)

SUMMARY_METRICS = ("nDCG@10", "R@5", "R@10", "R@100", "MRR@10")


def _config_line(c: dict[str, Any]) -> str:
    if "bm25" in c:
        return f"- `{c['name']}`: reference BM25, " + ", ".join(f"{k}={v}" for k, v in c["bm25"].items())
    params = ", ".join(f"{k}={v}" for k, v in c["params"].items())
    fill = "" if c["budget"] == "own" else "; per query its seed caps (or, with hops, max_frontier) are set to fill the budget"
    return f"- `{c['name']}` (preset `{c['preset']}`, budget {c['budget']}{fill}): {params}"


def _run_lines(doc: dict[str, Any]) -> list[str]:
    s = doc["seconds"]
    return [
        f"- command: `{doc['command']}`",
        f"- commit: `{doc['commit']}`; index model: `{doc.get('model')}`",
        f"- machine: {doc['machine']['cpus']} CPUs, Python {doc['machine']['python']}, {doc['machine']['platform']}",
        f"- time: {s['total']:.1f} s ({s['passes']:.1f} s retrieval passes, {s['scoring']:.2f} s scoring, "
        f"{s.get('reference_bm25', 0.0):.1f} s reference BM25; significance tests {doc.get('stats_seconds', 0.0):.1f} s)",
    ]


def dataset_markdown(doc: dict[str, Any], png_name: str) -> str:
    comps = doc["comparisons"]
    lines = [
        f"# {doc['dataset']} — {doc.get('split') or 'queries'}",
        "",
        f"{doc['n_queries']} queries over {doc['n_files']} files ({doc['n_chunks']} chunks); file-level ranking "
        f"(`--files-only`), depth {doc['depth']}. Reference for significance: `{comps['reference']}`.",
        "",
        markdown_table(main_head(), main_rows(doc)),
        "",
        LEGEND + ".",
        "",
        f"Against `{comps['reference']}`, per query ({comps['method']}):",
        "",
        markdown_table(comparison_head(), comparison_rows(doc, METRIC_NAMES)),
        "",
    ]
    head, rows = kind_rows(doc, "nDCG@10")
    if rows:
        lines += ["nDCG@10 by query type (the set's own `type` of each query):", "", markdown_table(head, rows), ""]
    lex = lexical_lines(doc, METRIC_NAMES)
    if lex:
        lines += ["ragx's lexical leg against the reference BM25 (same files, same queries; BH across metrics):", "",
                  *(f"- {x}" for x in lex), ""]
    if doc.get("chunks"):
        chunk_rows = [[n, *(f"{m[k]:.4f}" for k in METRIC_NAMES)] for n, m in doc["chunks"]["means"].items()]
        lines += ["Chunk level (labels on line ranges):", "", markdown_table(["config", *METRIC_NAMES], chunk_rows), ""]
    lines += ["Configurations:", "", *(_config_line(c) for c in doc["configs"]), "", *_run_lines(doc), "",
              f"![{doc['dataset']}]({png_name})", ""]
    return "\n".join(lines)


def write_report(doc: dict[str, Any], folder: Path, stem: str) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    md, png = folder / f"{stem}.md", folder / f"{stem}.png"
    md.write_text(dataset_markdown(doc, png.name), encoding="utf-8")
    dataset_plot(doc, png)
    return md, png


def write_summary(docs: list[dict[str, Any]], folder: Path, stem: str, command: str) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    md, png = folder / f"{stem}.md", folder / f"{stem}.png"
    ref = docs[0]["comparisons"]["reference"]
    lines = [f"# {len(docs)} datasets — {', '.join(d['dataset'] for d in docs)}", "",
             f"File level; mean = unweighted mean over datasets; markers per dataset against `{ref}`.", "", LEGEND + ".", ""]
    for metric in SUMMARY_METRICS:
        lines += [f"## {metric}", "", markdown_table(summary_head(docs), summary_rows(docs, metric)), ""]
    budget_rows = [[name, *(f"{d['budgets'][name]['candidates']:.1f} / {d['budgets'][name]['files']:.1f}" for d in docs)]
                   for name in docs[0]["budgets"] if all(name in d["budgets"] for d in docs)]
    lines += ["## Candidates scored / files ranked (mean per query)", "",
              markdown_table(["config", *(d["dataset"] for d in docs)], budget_rows), ""]
    if has_gap(docs):
        lines += ["## Train / train − test gap (nDCG@10)", "",
                  "The same configurations on each collection's train split; a set with no train split was never tuned on.", "",
                  markdown_table(gap_head(docs), gap_rows(docs, "nDCG@10")), ""]
    lex = [(d["dataset"], x) for d in docs for x in lexical_lines(d, HEADLINE)]
    if lex:
        lines += ["## ragx's lexical leg against the reference BM25", "", *(f"- {ds}: {x}" for ds, x in lex), ""]
    lines += ["Per dataset: " + ", ".join(f"[{d['dataset']}]({d['dataset']}-{d.get('split') or 'queries'}.md)" for d in docs), "",
              f"- command: `{command}`", f"- commit: `{docs[0]['commit']}`", "", f"![summary]({png.name})", ""]
    md.write_text("\n".join(lines), encoding="utf-8")
    summary_plot(docs, ("nDCG@10", "R@10", "R@100"), png)
    return md, png
