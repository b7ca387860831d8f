"""Labelled queries: one JSON object per line.

    {"query": "...", "relevant_files": ["a.md", "b/c.py"]}            binary labels
    {"query": "...", "relevance": {"a.md": 2, "b/c.py": 1}}          graded labels
    {"query": "...", "relevant_chunks": {"a.md:10-24": 1}}           labels on line ranges (chunk level;
                                                                     their files count as relevant files)

An optional "id" names the query (default: its line number); an optional "type" names its kind
(e.g. "paraphrase", "linked"), and `ragx eval` then reports each kind apart. Paths are relative to the
corpus root.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError, read_user_text


@dataclass
class LabelledQuery:
    id: str
    text: str
    files: dict[str, int]                                   # path -> grade (> 0)
    spans: dict[tuple[str, int, int], int] = field(default_factory=dict)  # (path, line_start, line_end) -> grade
    kind: str = ""                                          # the query's "type", if the set names one


def _span(key: str, where: str) -> tuple[str, int, int]:
    path, _, lines = key.rpartition(":")
    start, _, end = lines.partition("-")
    if not path or not start.isdigit() or not (end or start).isdigit():
        raise UsageError(f"{where}: relevant_chunks keys look like 'path:START-END', got {key!r}")
    return path, int(start), int(end or start)


def _grade(value: object, where: str, field_name: str, key: str) -> int:
    """A relevance grade: a whole number (0 = not relevant). "high", 1.5, true or null are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise UsageError(f"{where}: {field_name}[{key!r}] must be a whole-number grade (0, 1, 2, ...), got {json.dumps(value)}")
    return int(value)


def _mapping(obj: dict, name: str, where: str) -> dict:
    value = obj.get(name, {})
    if not isinstance(value, dict):
        raise UsageError(f'{where}: "{name}" must be an object {{"path": grade, ...}}, got {type(value).__name__}')
    return value


def _labels(obj: dict, where: str) -> tuple[dict[str, int], dict[tuple[str, int, int], int]]:
    """(file grades, line-range grades) of one query line, every value checked."""
    files: dict[str, int] = {}
    if "relevant_files" in obj and "relevance" in obj:  # which one counts would be a silent guess
        raise UsageError(f'{where}: give "relevant_files" (a list) or "relevance" (graded), not both')
    if "relevant_files" in obj:
        listed = obj["relevant_files"]
        if not isinstance(listed, list) or not all(isinstance(p, str) and p for p in listed):
            raise UsageError(f'{where}: "relevant_files" must be a list of paths, got {json.dumps(listed)[:80]}')
        files = {p: 1 for p in listed}
    if "relevance" in obj:
        files = {str(p): _grade(g, where, "relevance", p) for p, g in _mapping(obj, "relevance", where).items()}
    spans = {
        _span(k, where): _grade(g, where, "relevant_chunks", k) for k, g in _mapping(obj, "relevant_chunks", where).items()
    }
    files = {p: g for p, g in files.items() if g > 0}
    for (span_path, _, _), grade in spans.items():  # a relevant range makes its file relevant too
        if grade > 0:
            files[span_path] = max(grade, files.get(span_path, 0))
    return files, spans


def _read_lines(path: Path) -> list[str]:
    return read_user_text(path, "queries file", folder="; give a .jsonl file").splitlines()


def load_queries(path: Path) -> list[LabelledQuery]:
    out: list[LabelledQuery] = []
    for n, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where}: malformed JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("query"), str) or not obj["query"].strip():
            raise UsageError(f"{where}: each line needs a non-empty \"query\" string")
        files, spans = _labels(obj, where)
        if not files and not spans:
            raise UsageError(f"{where}: no relevant_files, relevance or relevant_chunks with a grade above 0")
        kind = obj.get("type", "")
        if not isinstance(kind, str):
            raise UsageError(f'{where}: "type" must be a string, got {json.dumps(kind)[:40]}')
        out.append(LabelledQuery(str(obj.get("id", n)), obj["query"], files, spans, kind))
    if not out:
        raise UsageError(f"{path} holds no queries")
    ids = [q.id for q in out]
    if len(set(ids)) != len(ids):
        raise UsageError(f"{path}: query ids are not unique")
    return out


def check_labelled_files(queries: list[LabelledQuery], indexed: Collection[str], path: Path | str) -> None:
    """Refuse labels naming files the index does not hold: they would score 0 silently and every
    metric would be wrong (a typo, a path relative to another folder, an unindexed file)."""
    missing: dict[str, str] = {}
    for q in queries:
        for p in [*q.files, *(span[0] for span in q.spans)]:
            if p not in indexed:
                missing.setdefault(p, q.id)
    if missing:
        shown = ", ".join(f"{p} (query {qid})" for p, qid in list(missing.items())[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise UsageError(
            f"{path}: {len(missing)} labelled file(s) are not in the index: {shown}{more}; "
            "paths are relative to the corpus root (run `ragx index` if the files are new)"
        )
