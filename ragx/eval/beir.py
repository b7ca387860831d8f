"""BEIR-layout collections (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) as real folders of files.

`materialise` writes one markdown file per document (`<id>.md`: the title as a heading, then the
text) under OUT/corpus/, and each split's judged queries to OUT/queries/<split>.jsonl as
`{"id", "query", "relevance": {"<id>.md": grade}}`, paths relative to the corpus folder. Files whose
content is already right are left alone, so re-running it does not disturb an index of the folder.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def doc_filename(doc_id: str) -> str:
    return _UNSAFE.sub("_", doc_id) + ".md"


def doc_text(title: str, text: str) -> str:
    title, text = (title or "").strip(), (text or "").strip()
    if title:
        return f"# {title}\n\n{text}\n" if text else f"# {title}\n"
    return f"{text}\n" if text else ""


@dataclass
class Materialised:
    corpus_dir: Path
    queries: dict[str, Path]      # split -> queries file
    documents: int
    written: int                  # files created or rewritten this time
    query_counts: dict[str, int]


def read_jsonl(path: Path) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError:
        raise UsageError(f"{path} not found: not a BEIR-layout folder") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: malformed JSON line: {exc}") from None


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh, delimiter="\t")
        header = next(rows, None)
        if header is None or header[0] != "query-id":
            raise UsageError(f"{path}: expected a header line 'query-id<TAB>corpus-id<TAB>score'")
        for row in rows:
            if len(row) < 3:
                continue
            qrels.setdefault(row[0], {})[row[1]] = int(float(row[2]))
    return qrels


def splits_of(data_dir: Path) -> list[str]:
    return sorted(p.stem for p in (data_dir / "qrels").glob("*.tsv"))


def _write_if_changed(path: Path, content: str) -> bool:
    data = content.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.write_bytes(data)
    return True


def check_collection(data_dir: Path, splits: list[str] | None = None) -> list[str]:
    """A BEIR folder's layout, checked without reading it (a folder, corpus.jsonl, queries.jsonl, qrels
    for each split asked for): the splits to materialise (all it has when `splits` is None)."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise UsageError(f"{data_dir} is not a folder")
    available = splits_of(data_dir)
    splits = splits or available
    unknown = sorted(set(splits) - set(available))
    if unknown:
        raise UsageError(f"{data_dir} has no qrels for split {unknown[0]} (has: {', '.join(available) or 'none'})")
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (data_dir / name).is_file():
            raise UsageError(f"{data_dir / name} not found: not a BEIR-layout folder")
    return splits


def corpus_dir_of(out_dir: Path) -> Path:
    """Where `materialise(..., out_dir)` writes the documents: the corpus root that gets indexed."""
    return Path(out_dir) / "corpus"


def materialise(data_dir: Path, out_dir: Path, splits: list[str] | None = None) -> Materialised:
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    splits = check_collection(data_dir, splits)

    docs = read_jsonl(data_dir / "corpus.jsonl")
    corpus_dir = corpus_dir_of(out_dir)
    corpus_dir.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    written = 0
    for doc in docs:
        doc_id = str(doc["_id"])
        name = doc_filename(doc_id)
        if name in names.values() and names.get(doc_id) != name:
            raise UsageError(f"document ids {doc_id!r} and another both map to {name}")
        names[doc_id] = name
        written += _write_if_changed(corpus_dir / name, doc_text(doc.get("title", ""), doc.get("text", "")))
    stale = {p.name for p in corpus_dir.glob("*.md")} - set(names.values())
    for name in stale:
        (corpus_dir / name).unlink()

    rows = list(read_jsonl(data_dir / "queries.jsonl"))
    queries = {str(q["_id"]): q["text"] for q in rows}
    kinds = {str(q["_id"]): str((q.get("metadata") or {}).get("type") or "") for q in rows}
    qdir = out_dir / "queries"
    qdir.mkdir(exist_ok=True)
    files, counts = {}, {}
    for split in splits:
        qrels = read_qrels(data_dir / "qrels" / f"{split}.tsv")
        lines = []
        for qid, judged in qrels.items():
            if qid not in queries:
                continue
            relevance = {names[d]: g for d, g in judged.items() if d in names and g > 0}
            if relevance:
                line = {"id": qid, "query": queries[qid], "relevance": relevance} | ({"type": kinds[qid]} if kinds[qid] else {})
                lines.append(json.dumps(line, ensure_ascii=False))
        files[split] = qdir / f"{split}.jsonl"
        _write_if_changed(files[split], "\n".join(lines) + "\n")
        counts[split] = len(lines)
    return Materialised(corpus_dir, files, len(docs), written, counts)


def cache_dir_for(data_dir: Path) -> Path:
    """Where `ragx eval beir` keeps a collection's folder and index: per dataset path, reused while unchanged."""
    import hashlib
    import os

    base = os.environ.get("RAGX_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ragx"
    resolved = Path(data_dir).resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:8]
    return Path(base) / "beir" / f"{resolved.name}-{digest}"
