"""`python -m lab models`: the embedding-model study of one dataset split.

For every model named in `models` (entries of `model_catalog` in configs/lab.yaml: an [embeddings]
table, optionally a server to start) the dataset is indexed once into its own build folder (hard links
to the dataset's files, a ragx.toml with that [embeddings] table), through a `CachedEmbedder` so that
vectors already computed for that model identity (ragx/eval/vector_cache.py) are never embedded again. Then
each model gets:

* every eval preset's metrics (`suite.evaluate_dataset`: Corpus.evaluate with its presets and their
  paired significance against the hybrid), and, across models, each preset's per-query nDCG@10 against
  the same preset under the reference model (paired randomization test, Benjamini-Hochberg across the
  other models);
* indexing throughput: chunks/s on a fixed sample of chunk texts (the same texts for every model,
  after a warm-up batch), and the chunks/s of the real index build when it embedded anything;
* query embedding latency: median ms of `embed_query` over the split's first queries;
* the vectors' memory (n x dim float32) and disk (vectors.npy + vectors.hnsw of the generation);
* the model's window: how many chunks the chunker would have kept whole without the model's window
  that are longer than it (in the model's own token counter), i.e. had to be split smaller.

One MLflow run per model; a markdown table, a plot and summary.json under reports/lab/models-<dataset>-<split>/.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import tomlkit

from ragx.api import Corpus
from ragx.config import INDEX_DIR, PROJECT_FILE
from ragx.errors import ManifestMismatchError
from ragx.eval.stats import Comparison, correct, paired
from ragx.eval.suite import evaluate_dataset
from ragx.eval.vector_cache import CachedEmbedder

from .builds import _link_tree, prepare
from .shown import IndexProgress, counted

METRIC = "nDCG@10"
UNCAPPED = 1_000_000  # a chunker cap no section reaches: what the chunker keeps whole without a model window


def specs(cfg) -> list[dict[str, Any]]:
    from omegaconf import OmegaConf

    catalog = OmegaConf.to_container(cfg.model_catalog, resolve=True)
    assert isinstance(catalog, dict)
    unknown = [m for m in cfg.models if m not in catalog]
    if unknown:
        raise SystemExit(f"lab models: unknown model(s) {', '.join(unknown)} (model_catalog has {', '.join(map(str, catalog))})")
    if cfg.model_reference not in cfg.models:
        raise SystemExit(f"lab models: the reference model {cfg.model_reference!r} must be one of models={list(cfg.models)}")
    return [{"name": m, **catalog[m]} for m in cfg.models]


@contextlib.contextmanager
def served(spec: dict[str, Any]):
    """Start the model's server (a catalog entry's `serve`: command and health URL) for the block; None: nothing to start."""
    serve = spec.get("serve")
    if not serve:
        yield
        return
    command = [sys.executable if part == "{python}" else str(part) for part in serve["command"]]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_healthy(serve["health"], proc, float(serve.get("start_seconds", 120)))
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_healthy(url: str, proc: subprocess.Popen, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"model server exited with {proc.returncode}: {err.strip()[-500:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"model server not healthy at {url} after {limit:.0f} s")


def model_build(base: Corpus, spec: dict[str, Any], folder: Path, vectors_root: Path) -> tuple[Corpus, CachedEmbedder, dict[str, Any]]:
    """The dataset indexed with the model's [embeddings]: hard links + ragx.toml, seeded with the base index
    (whose vectors are reused as they are when the base was built by the same model)."""
    root = folder / spec["name"]
    root.mkdir(parents=True, exist_ok=True)
    _link_tree(base.root, root)
    doc = tomlkit.document()
    table = tomlkit.table()
    for key, value in spec["embeddings"].items():
        table[key] = value
    doc["embeddings"] = table
    wanted = tomlkit.dumps(doc)
    project = root / PROJECT_FILE
    fresh = not (root / INDEX_DIR).exists()
    if fresh:
        shutil.copytree(base.root / INDEX_DIR, root / INDEX_DIR)
    changed = fresh or not project.exists() or project.read_text() != wanted
    if changed:
        project.write_text(wanted)
    corpus = Corpus.open(root)
    embedder = CachedEmbedder(corpus.embedder, vectors_root)
    corpus.use_embedder(embedder)
    t0 = time.perf_counter()
    try:
        report = corpus.index(full=changed, reporter=IndexProgress())
    except ManifestMismatchError:  # an earlier run stopped between writing ragx.toml and committing the index
        report = corpus.index(full=True, reporter=IndexProgress())
    stats = {"index_seconds": time.perf_counter() - t0, "reindexed": changed, "embedded_chunks": report.embedded_chunks,
             "reused_chunks": report.reused_chunks, "cache_hits": embedder.hits, "cache_misses": embedder.misses}
    if embedder.misses:
        stats["index_chunks_per_s"] = embedder.misses / embedder.embed_seconds
    return corpus, embedder, stats


def bench_throughput(embedder, texts: list[str], batch_size: int) -> dict[str, float]:
    """chunks/s of the model itself (not the cache) on `texts`, after a warm-up batch."""
    embedder.embed_documents(texts[:batch_size], batch_size=batch_size)
    t0 = time.perf_counter()
    embedder.embed_documents(texts, batch_size=batch_size)
    seconds = time.perf_counter() - t0
    return {"bench_chunks": len(texts), "bench_seconds": seconds, "chunks_per_s": len(texts) / seconds}


def query_latency(embedder, queries: list[str]) -> dict[str, float]:
    for text in queries[:3]:
        embedder.embed_query(text)
    times = []
    for text in queries:
        t0 = time.perf_counter()
        embedder.embed_query(text)
        times.append((time.perf_counter() - t0) * 1000)
    return {"query_ms_median": statistics.median(times), "query_ms_p90": float(np.percentile(times, 90)), "latency_queries": len(times)}


def footprint(corpus: Corpus) -> dict[str, int]:
    gen = max(corpus.layout.dir.glob("gen-*"))
    counts = corpus.searcher.store.counts()
    dim = int(corpus.embedder.dim)
    disk = sum((gen / name).stat().st_size for name in ("vectors.npy", "vectors.hnsw") if (gen / name).exists())
    return {"chunks": counts["chunks"], "files": counts["files"], "dim": dim,
            "vector_bytes_memory": counts["chunks"] * dim * 4, "vector_bytes_disk": disk}


def window(corpus: Corpus, counter) -> dict[str, int]:
    """Chunks the chunker keeps whole without a model window (same target and minimum) that exceed the
    model's window in its own tokens: those the window made the chunker split."""
    from ragx.ingest.chunk import ChunkSettings, chunk_text

    chunking = corpus.settings.chunking
    wide = ChunkSettings(max_tokens=UNCAPPED, target_tokens=chunking.target_tokens, min_tokens=chunking.min_tokens)
    cap = int(counter.max_content_tokens)
    whole = over = longest = 0
    for path in sorted(corpus.searcher.store.files()):
        data = (corpus.root / path).read_bytes()
        for chunk in chunk_text(path, data, data.decode("utf-8"), counter, wide):
            whole += 1
            over += chunk.n_tokens > cap
            longest = max(longest, chunk.n_tokens)
    return {"window_tokens": cap, "unwindowed_chunks": whole, "over_window": over, "longest_unwindowed": longest}


def cross_model(docs: dict[str, dict[str, Any]], reference: str) -> dict[str, dict[str, Comparison]]:
    """{preset: {model: Comparison}}: each preset's per-query nDCG@10 under each model against the reference
    model's, Benjamini-Hochberg across the models of one preset."""
    ref = docs[reference]["files"]["per_query"]
    out: dict[str, dict[str, Comparison]] = {}
    for preset, per_query in ref.items():
        qids = list(per_query)
        base = np.array([per_query[q][METRIC] for q in qids])
        family = {m: paired(np.array([d["files"]["per_query"][preset][q][METRIC] for q in qids]), base)
                  for m, d in docs.items() if m != reference}
        correct(list(family.values()))
        out[preset] = family
    return out


def measure(spec: dict[str, Any], base: Corpus, queries, cfg, folder: Path) -> dict[str, Any]:
    """Build, time and evaluate one model; its record (without the per-query figures) and eval doc."""
    vectors_root = Path(cfg.cache_root) / "vectors"
    with served(spec):
        corpus, embedder, stats = model_build(base, spec, folder, vectors_root)
        _, texts = base.searcher.store.chunk_texts()
        sample = texts[: int(cfg.model_bench.chunks)]
        batch = int(corpus.settings.embeddings.batch_size)
        record: dict[str, Any] = {"model": spec["name"], "identity": embedder.name, "embeddings": spec["embeddings"], **stats}
        record |= bench_throughput(embedder.inner, sample, batch)
        record |= query_latency(embedder.inner, [q.text for q in queries[: int(cfg.model_bench.queries)]])
        record |= footprint(corpus)
        record |= window(corpus, embedder.token_counter())
        meta = {"dataset": cfg.dataset.name, "split": cfg.split, "model_study": spec["name"]}
        doc = counted(f"evaluating {spec['name']}", len(queries), "queries", partial(evaluate_dataset, corpus, queries, None, None, meta))
        corpus.close()
    record["means"] = {p: m[METRIC] for p, m in doc["files"]["means"].items()}
    record["best_preset"] = max(record["means"], key=record["means"].get)
    # Within the model: every preset against its hybrid (the harness's own reference), nDCG@10.
    record["vs_hybrid"] = {p: {k: c[METRIC][k] for k in ("diff", "p_adjusted", "significant")}
                           for p, c in doc["comparisons"]["configs"].items()}
    return {"record": record, "doc": doc}


def reuse_key(spec: dict[str, Any], cfg) -> str:
    """Everything a model's stored result is a function of: the model's catalog entry (its [embeddings]
    and how it is served), ragx's code, the shipped defaults (ragx/defaults.toml: every preset scores
    with them), the dataset, the split and the benchmark sizes. A change to any of them measures again."""
    import hashlib

    from omegaconf import OmegaConf

    from ragx.config import DEFAULTS_PATH

    from .passes import code_hash

    payload = {"spec": spec, "code": code_hash(), "defaults": DEFAULTS_PATH.read_text(encoding="utf-8"),
               "dataset": OmegaConf.to_container(cfg.dataset, resolve=True), "split": str(cfg.split),
               "bench": OmegaConf.to_container(cfg.model_bench, resolve=True)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def measured(spec: dict[str, Any], cfg, base: Corpus, queries, folder: Path, stored: Path) -> dict[str, Any]:
    """The model's result: the stored one when its reuse key matches, else measured now (and stored).
    A model that fails (its server does not start, times out, a file is missing) gives a record saying
    why, stored neither way: the study goes on with the other models."""
    key = reuse_key(spec, cfg)
    old = json.loads(stored.read_text(encoding="utf-8")) if stored.exists() else None
    if old and old.get("key") == key and not cfg.model_rerun:
        print(f"{spec['name']}: reusing {stored}", flush=True)
        return old
    started = time.perf_counter()
    try:
        result = {**measure(spec, base, queries, cfg, folder), "key": key}
    except Exception as exc:  # noqa: BLE001 - any failure of one model is that model's row, not the study's end
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        print(f"{spec['name']}: FAILED after {time.perf_counter() - started:.0f} s: {reason}", file=sys.stderr, flush=True)
        return {"record": {"model": spec["name"], "embeddings": spec["embeddings"], "error": reason}, "doc": None}
    stored.write_text(json.dumps(result), encoding="utf-8")
    print(f"{spec['name']}: measured in {time.perf_counter() - started:.0f} s", flush=True)
    return result


def run(cfg, repo: Path) -> dict[str, Any]:
    """Measure every model (or reuse its stored result: lab.models.reuse_key), compare, report, track."""
    base, queries = prepare(dict(cfg.dataset), cfg.split, IndexProgress())
    out = repo / cfg.reports / f"models-{cfg.dataset.name}-{cfg.split}"
    (out / "runs").mkdir(parents=True, exist_ok=True)
    folder = Path(cfg.cache_root) / "models" / f"{cfg.dataset.name}-{cfg.split}"
    results = {spec["name"]: measured(spec, cfg, base, queries, folder, out / "runs" / f"{spec['name']}.json") for spec in specs(cfg)}
    docs = {m: r["doc"] for m, r in results.items() if r["doc"] is not None}
    cross = cross_model(docs, cfg.model_reference) if cfg.model_reference in docs else {}
    records = [r["record"] for r in results.values() if r["doc"] is not None]
    failed = [r["record"] for r in results.values() if r["doc"] is None]
    title = f"{cfg.dataset.name} {cfg.split}: {len(queries)} queries, reference model {cfg.model_reference}"
    table = markdown(records, cross, cfg.model_reference, title, failed) if records else f"### {title}\n"
    table += "" if records else "".join(f"\n{r['model']}: not measured: {r['error']}\n" for r in failed)
    if records and cfg.model_reference not in docs:
        table += f"\nno comparison across models: the reference model {cfg.model_reference} was not measured\n"
    (out / "table.md").write_text(table, encoding="utf-8")
    if records:
        plot(records, cross, cfg.model_reference, out / "plot.png", title)
    summary = {"dataset": cfg.dataset.name, "split": cfg.split, "reference": cfg.model_reference, "records": records, "failed": failed,
               "cross_model": {p: {m: c.to_json() for m, c in fam.items()} for p, fam in cross.items()}}
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    track(cfg, records, out)
    print(table)
    return summary


def markdown(records: list[dict[str, Any]], cross, reference: str, title: str, failed: list[dict[str, Any]] | None = None) -> str:
    presets = list(records[0]["means"])
    lines = [f"### {title}", "", f"{METRIC} of files per eval preset; against the same preset under `{reference}`: difference, "
             "paired randomization p (Benjamini-Hochberg across models; * < 0.05). Best preset: within the model, "
             "against its hybrid (the harness's comparison, BH across presets).", "",
             "| model | " + " | ".join(presets) + " | best preset |", "|---" * (len(presets) + 2) + "|"]
    for r in records:
        cells = []
        for p in presets:
            c = cross.get(p, {}).get(r["model"])
            cells.append(f"{r['means'][p]:.4f}" + ("" if c is None else f" ({c.diff:+.4f}, p {c.p_adjusted:.3g}{'*' if c.significant else ''})"))
        best = r["best_preset"]
        vs = r["vs_hybrid"].get(best)
        within = "" if vs is None else f" ({vs['diff']:+.4f} vs hybrid, p {vs['p_adjusted']:.3g}{'*' if vs['significant'] else ''})"
        lines.append(f"| {r['model']} | " + " | ".join(cells) + f" | {best}{within} |")
    for r in failed or []:  # the model's row says why it has no figures; the others keep theirs
        lines.append(f"| {r['model']} | " + " | ".join(["not measured"] * len(presets)) + f" | {r['error'].replace('|', '/')} |")
    lines += ["", "| model | identity | dim | chunks | split by window | bench chunks/s | index chunks/s | query ms (median) "
              "| vectors MB (RAM) | vectors+HNSW MB (disk) |", "|---" * 10 + "|"]
    for r in records:
        index_rate = f"{r['index_chunks_per_s']:.1f}" if "index_chunks_per_s" in r else "(reused)"
        identity = r["identity"].replace("|", "\\|")  # a pipe would end the markdown cell
        lines.append(f"| {r['model']} | `{identity}` | {r['dim']} | {r['chunks']} | {r['over_window']} of {r['unwindowed_chunks']} "
                     f"(window {r['window_tokens']}) | {r['chunks_per_s']:.1f} | {index_rate} | {r['query_ms_median']:.1f} "
                     f"| {r['vector_bytes_memory'] / 1e6:.1f} | {r['vector_bytes_disk'] / 1e6:.1f} |")
    return "\n".join(lines) + "\n"


def plot(records: list[dict[str, Any]], cross, reference: str, path: Path, title: str) -> None:
    """Left: each model's difference from the reference model, per preset, with its 95% CI (the paired
    test's BCa bootstrap), around 0, not raw scores from 0; right: indexing speed against the hybrid's score."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    presets = list(records[0]["means"])
    others = [r for r in records if r["model"] != reference]
    fig, (bars, speed) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [2, 1]})
    width = 0.8 / max(len(others), 1)
    for k, r in enumerate(others):
        found = [cross.get(p, {}).get(r["model"]) for p in presets]
        diff = [c.diff if c else np.nan for c in found]
        err = np.array([[c.diff - c.ci[0], c.ci[1] - c.diff] if c else [np.nan, np.nan] for c in found]).T
        bars.bar(np.arange(len(presets)) + k * width, diff, width, yerr=err, capsize=3, label=r["model"])
    for r in records:
        speed.scatter(r["chunks_per_s"], r["means"]["hybrid"], s=40)
        speed.annotate(r["model"], (r["chunks_per_s"], r["means"]["hybrid"]), fontsize=8)
    bars.axhline(0.0, color="grey", lw=0.8)
    bars.set_xticks(np.arange(len(presets)) + 0.4 - width / 2, presets)
    bars.set_ylabel(f"{METRIC} - {reference}'s (95% CI)")
    if others:
        bars.legend(fontsize=8)
    speed.set_xlabel("chunks/s (indexing, this machine)")
    speed.set_ylabel(f"hybrid {METRIC}")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def track(cfg, records: list[dict[str, Any]], out: Path) -> None:
    """One MLflow run per model: its settings, every preset's score and its costs; the table and plot attached."""
    import mlflow

    from .sweep import metric_names, start_tracking

    start_tracking(cfg)
    for r in records:
        with mlflow.start_run(run_name=f"models-{cfg.dataset.name}-{cfg.split}-{r['model']}"):
            mlflow.set_tags({"study": "models", "dataset": cfg.dataset.name, "split": cfg.split, "model": r["model"]})
            mlflow.log_params({"identity": r["identity"], "reference": cfg.model_reference,
                               **{f"embeddings.{k}": v for k, v in r["embeddings"].items()}})
            numbers = {k: v for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            mlflow.log_metrics(metric_names({**numbers, **{f"{p}_{METRIC}": v for p, v in r["means"].items()}}))
            mlflow.log_dict(r, "record.json")
            for name in ("table.md", "plot.png"):
                mlflow.log_artifact(str(out / name))
