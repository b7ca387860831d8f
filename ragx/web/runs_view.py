"""The runs page's model: two configurations of saved `ragx eval --json` runs (ragx.eval.v2) compared
query by query, and one query's two rankings side by side (re-run live on the served corpus)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .. import schemas
from ..api import Corpus, labelled_queries, paired_comparison, search_params
from ..errors import UsageError
from .highlight import marked, query_terms

SIDE_TOP = 10  # files shown per ranking side by side


def list_runs(runs_dir: Path | None) -> list[str]:
    """The saved runs a page may open: the names of the .json files directly in the runs folder."""
    if runs_dir is None:
        return []
    return sorted(p.name for p in runs_dir.iterdir() if p.suffix == ".json" and p.is_file())


# Runs computed by the page itself (two configurations over the served corpus's labelled queries), by name.
LIVE_RUNS: dict[str, dict[str, Any]] = {}
LIVE_DATASET = "live"


def live_run(corpus: Corpus, queries: Path | None, spec_a: str, spec_b: str) -> str:
    """Evaluate two configurations (`ragx eval --config` specs without the name: "hybrid,lexical_n=50")
    over the served corpus's labelled queries, once per pair; the name the run is kept under."""
    if queries is None:
        raise UsageError("live runs need the corpus's labelled queries: start `ragx serve --queries FILE`")
    name = f"live: {spec_a} vs {spec_b}"
    kept = LIVE_RUNS.get(name)
    if kept is None or kept["datasets"][0]["corpus"] != str(corpus.root):
        doc = corpus.evaluate(queries, [f"A={spec_a}", f"B={spec_b}"])
        LIVE_RUNS[name] = {"schema": schemas.EVAL, "datasets": [{**doc, "dataset": LIVE_DATASET}]}
    return name


def load_run(runs_dir: Path | None, name: str) -> dict[str, Any]:
    """A saved run by its listed name only (never a path from the URL: no way out of the folder), or a
    live run this page computed."""
    if name in LIVE_RUNS:
        return LIVE_RUNS[name]
    if runs_dir is None or name not in list_runs(runs_dir):
        raise UsageError(f"no saved run {name!r} in the runs folder")
    try:
        doc = json.loads((runs_dir / name).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{name} is not a readable JSON file: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != schemas.EVAL:
        raise UsageError(f"{name} is not a `ragx eval --json` run ({schemas.EVAL})")
    return doc


@dataclass(frozen=True)
class Side:
    run: str
    config: str

    def label(self) -> str:
        return f"{self.config} ({self.run})"


@dataclass(frozen=True)
class Pick:
    a: Side
    b: Side
    dataset: str
    metric: str

    @classmethod
    def read(cls, params: Mapping[str, str], runs: list[str]) -> "Pick | None":
        """The two sides from the URL; None until both runs are chosen."""
        a, b = params.get("a") or (runs[0] if runs else ""), params.get("b") or (runs[-1] if runs else "")
        if not a or not b:
            return None
        return cls(Side(a, params.get("ca", "")), Side(b, params.get("cb", "")), params.get("dataset", ""),
                   params.get("metric", "") or "nDCG@10")

    def query_string(self) -> str:
        from urllib.parse import urlencode

        return urlencode({"a": self.a.run, "ca": self.a.config, "b": self.b.run, "cb": self.b.config,
                          "dataset": self.dataset, "metric": self.metric})


def dataset_doc(run: dict[str, Any], name: str) -> dict[str, Any]:
    """The run's document for dataset `name` (its first when `name` is empty)."""
    for ds in run["datasets"]:
        if not name or ds.get("dataset") == name:
            return ds
    raise UsageError(f"the run has no dataset {name!r}")


def _config(ds: dict[str, Any], name: str) -> str:
    per_query = ds["files"]["per_query"]
    if name and name not in per_query:
        raise UsageError(f"no configuration {name!r} in this run (it has {', '.join(per_query)})")
    return name or next(iter(per_query))


def resolve(pick: Pick, runs_dir: Path | None) -> tuple[Pick, dict[str, Any], dict[str, Any]]:
    """The pick with defaults filled in (dataset, and configurations: the run's first and its second
    when both sides are one run), and the two dataset documents."""
    run_a, run_b = load_run(runs_dir, pick.a.run), load_run(runs_dir, pick.b.run)
    ds_a = dataset_doc(run_a, pick.dataset)
    ds_b = dataset_doc(run_b, pick.dataset or ds_a.get("dataset", ""))
    ca = _config(ds_a, pick.a.config)
    default_b = next((c for c in ds_b["files"]["per_query"] if c != ca), ca) if pick.a.run == pick.b.run else ""
    cb = _config(ds_b, pick.b.config or default_b)
    return Pick(Side(pick.a.run, ca), Side(pick.b.run, cb), ds_a.get("dataset", ""), pick.metric), ds_a, ds_b


def compare(pick: Pick, ds_a: dict[str, Any], ds_b: dict[str, Any]) -> dict[str, Any]:
    """Per-query differences (B - A) of the metric, largest first, and their paired test."""
    qa, qb = ds_a["files"]["per_query"][pick.a.config], ds_b["files"]["per_query"][pick.b.config]
    qids = [q for q in qa if q in qb]
    if not qids:
        raise UsageError("the two runs share no query")
    if pick.metric not in qa[qids[0]]:
        raise UsageError(f"no metric {pick.metric!r} in this run (it has {', '.join(qa[qids[0]])})")
    a = [float(qa[q][pick.metric]) for q in qids]
    b = [float(qb[q][pick.metric]) for q in qids]
    rows = sorted(({"qid": q, "a": x, "b": y, "diff": y - x} for q, x, y in zip(qids, a, b)), key=lambda r: (-abs(r["diff"]), r["qid"]))
    widest = max((abs(r["diff"]) for r in rows), default=0.0) or 1.0
    return {"stats": paired_comparison(b, a), "rows": rows, "widest": widest, "n": len(qids),
            "mean_a": sum(a) / len(a), "mean_b": sum(b) / len(b), "metrics": list(qa[qids[0]])}


def queries_path(ds: dict[str, Any], runs_dir: Path | None) -> Path:
    """The run's queries file: recorded relative to where `ragx eval` ran, so also looked for beside the
    runs folder and beside the collection's folder (`ragx eval beir` keeps corpus/ and queries/ together)."""
    recorded = Path(ds.get("queries_file") or "")
    corpus = Path(ds.get("corpus") or "")
    bases = [Path.cwd(), *([runs_dir] if runs_dir else []), corpus.parent.parent]
    for candidate in [recorded, *(base / recorded for base in bases), corpus.parent / "queries" / recorded.name]:
        if recorded.name and candidate.is_file():
            return candidate
    raise UsageError(f"the run's queries file {recorded} is not found (looked beside the runs folder and the corpus)")


def _check_corpus(corpus: Corpus, ds: dict[str, Any]) -> None:
    recorded = Path(ds.get("corpus") or "")
    if recorded.resolve() != corpus.root.resolve():
        raise UsageError(f"this run searched {recorded}, the page serves {corpus.root}: start `ragx serve --root {recorded}` "
                         "to see its rankings")


def ranking(corpus: Corpus, ds: dict[str, Any], config: str, text: str, relevant: dict[str, int]) -> dict[str, Any]:
    """One configuration's files for `text`, re-run live with the run's recorded params: each with its
    relevance grade, its best passage (terms marked) and that passage's score breakdown."""
    cfg = next((c for c in ds["configs"] if c["name"] == config), None)
    if cfg is None or "params" not in cfg or cfg.get("preset") == "bm25-ref":
        return {"config": config, "files": [], "note": "the reference BM25 (bm25s) ranks outside the index: no live ranking"}
    params = search_params(cfg["params"])
    # An equal-budget configuration scored only as many candidates as its budget admitted, a cut a plain
    # query does not make: said on the page, since the live ranking may then differ from the run's.
    note = "" if cfg.get("budget") == "own" else (f"the run cut this configuration's candidates to budget={cfg.get('budget')}; "
                                                   "this live ranking uses its own caps and may differ")
    common: dict[str, Any] = {"params": params, "expand": bool(cfg.get("expand")), "evidence_check": False}
    files = corpus.query(text, top=SIDE_TOP, files_only=True, **common)["results"]
    chunks = {r["chunk_id"]: r for r in corpus.query(text, top=max(params.shortlist, 5 * SIDE_TOP), **common)["results"]}
    terms = query_terms(text)
    for f in files:
        f["grade"] = relevant.get(f["file"], 0)
        best = chunks.get(f["best_chunk"]["chunk_id"])
        f["breakdown"] = best["breakdown"] if best else None
        f["marked"] = marked(best["text"], terms) if best else ""
    return {"config": config, "files": files, "note": note}


def side_by_side(corpus: Corpus, pick: Pick, ds_a: dict[str, Any], ds_b: dict[str, Any], qid: str,
                 runs_dir: Path | None) -> dict[str, Any]:
    """Query `qid` under both configurations: its text, relevant files, both rankings, both metric values."""
    _check_corpus(corpus, ds_a)
    _check_corpus(corpus, ds_b)
    labelled = labelled_queries(queries_path(ds_a, runs_dir))
    if qid not in labelled:
        raise UsageError(f"no query {qid!r} in the run's queries file")
    text, relevant = labelled[qid]["text"], labelled[qid]["files"]
    values = [ds["files"]["per_query"][side.config].get(qid, {}) for ds, side in ((ds_a, pick.a), (ds_b, pick.b))]
    return {"qid": qid, "text": text, "relevant": relevant, "terms": sorted(query_terms(text)),
            "a": ranking(corpus, ds_a, pick.a.config, text, relevant), "b": ranking(corpus, ds_b, pick.b.config, text, relevant),
            "value_a": values[0], "value_b": values[1]}
