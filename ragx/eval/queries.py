"""Labelled queries: one JSON object per line.

    {"query": "...", "relevant_files": ["a.md", "b/c.py"]}            binary labels
    {"query": "...", "relevance": {"a.md": 2, "b/c.py": 1}}          graded labels
    {"query": "...", "relevant_chunks": {"a.md:10-24": 1}}           labels on line ranges (chunk level;
                                                                     their files count as relevant files)

An optional "id" names the query (default: its line number). Paths are relative to the corpus root.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError


@dataclass
class LabelledQuery:
    id: str
    text: str
    files: dict[str, int]                                   # path -> grade (> 0)
    spans: dict[tuple[str, int, int], int] = field(default_factory=dict)  # (path, line_start, line_end) -> grade


def _span(key: str, where: str) -> tuple[str, int, int]:
    path, _, lines = key.rpartition(":")
    start, _, end = lines.partition("-")
    if not path or not start.isdigit() or not (end or start).isdigit():
        raise UsageError(f"{where}: relevant_chunks keys look like 'path:START-END', got {key!r}")
    return path, int(start), int(end or start)


def load_queries(path: Path) -> list[LabelledQuery]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UsageError(f"queries file {path} not found") from None
    out: list[LabelledQuery] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where}: malformed JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("query"), str) or not obj["query"].strip():
            raise UsageError(f"{where}: each line needs a non-empty \"query\" string")
        files: dict[str, int] = {}
        if "relevant_files" in obj:
            files = {str(p): 1 for p in obj["relevant_files"]}
        if "relevance" in obj:
            files = {str(p): int(g) for p, g in obj["relevance"].items()}
        spans = {_span(k, where): int(g) for k, g in obj.get("relevant_chunks", {}).items()}
        files = {p: g for p, g in files.items() if g > 0}
        for (span_path, _, _), grade in spans.items():  # a labelled range makes its file relevant too
            if grade > 0 and "relevant_files" not in obj and "relevance" not in obj:
                files[span_path] = max(grade, files.get(span_path, 0))
        if not files and not spans:
            raise UsageError(f"{where}: no relevant_files, relevance or relevant_chunks with a grade above 0")
        out.append(LabelledQuery(str(obj.get("id", n)), obj["query"], files, spans))
    if not out:
        raise UsageError(f"{path} holds no queries")
    ids = [q.id for q in out]
    if len(set(ids)) != len(ids):
        raise UsageError(f"{path}: query ids are not unique")
    return out
