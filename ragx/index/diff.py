"""What changed in a corpus since its last index run: new, changed, deleted and unchanged files.

A file whose size and mtime match the stored row is unchanged without being read; otherwise it is
hashed, and only a different hash makes it changed (a `touch` is not a change).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..config import Settings
from ..ingest.discover import DiscoverSettings, Discovery, FoundFile, Problem, discover, hash_bytes
from .store import FileRow, StoredFiles


@dataclass
class CorpusDiff:
    new: list[FoundFile] = field(default_factory=list)
    changed: list[FoundFile] = field(default_factory=list)
    touched: list[tuple[FoundFile, FileRow]] = field(default_factory=list)  # new stat, same content
    deleted: list[FileRow] = field(default_factory=list)
    unchanged: int = 0
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    # Files found again unchanged since a run could not decode them (not UTF-8): skipped, not new.
    undecodable: list[FoundFile] = field(default_factory=list)

    @property
    def has_changes(self) -> bool:
        return bool(self.new or self.changed or self.deleted)

    def restricted_to(self, prefix: str) -> "CorpusDiff":
        """Only the changes at `prefix` (a file) or below it (a folder); the rest count as unchanged."""
        prefix = prefix.strip("/")
        inside = lambda path: not prefix or prefix == "." or path == prefix or path.startswith(prefix + "/")  # noqa: E731
        out = CorpusDiff(
            new=[f for f in self.new if inside(f.path)],
            changed=[f for f in self.changed if inside(f.path)],
            touched=[(f, r) for f, r in self.touched if inside(f.path)],
            deleted=[r for r in self.deleted if inside(r.path)],
            problems=[p for p in self.problems if inside(p.path)],
            skipped=[p for p in self.skipped if inside(p.path)],
            undecodable=self.undecodable,  # all of them: they stay remembered whatever the prefix
        )
        out.unchanged = self.unchanged + (len(self.changed) - len(out.changed)) + (len(self.deleted) - len(out.deleted))
        return out

    def counts(self) -> dict[str, int]:
        return {"new": len(self.new), "changed": len(self.changed), "deleted": len(self.deleted), "unchanged": self.unchanged}


def discover_settings(settings: Settings) -> DiscoverSettings:
    s = settings.index
    return DiscoverSettings(
        include=tuple(s.include), exclude=tuple(s.exclude), max_file_bytes=s.max_file_bytes, follow_symlinks=s.follow_symlinks
    )


def diff_corpus(
    root: Path, settings: Settings, stored: StoredFiles | None = None, undecodable: dict[str, tuple[int, int]] | None = None
) -> CorpusDiff:
    """`stored`: the index's files (None: none, every file is new); `undecodable`: {path: (size, mtime_ns)}
    of files known not to be UTF-8 (Store.undecodable)."""
    stored = stored if stored is not None else StoredFiles()
    undecodable = undecodable or {}
    stats = stored.stats
    found: Discovery = discover(root, discover_settings(settings), stats | undecodable if undecodable else stats)
    out = CorpusDiff(problems=list(found.problems), skipped=list(found.skipped))
    for f in found.files:
        stat = stats.get(f.path)
        if stat is None:
            if undecodable.get(f.path) == (f.size, f.mtime_ns):
                out.undecodable.append(f)
                out.skipped.append(Problem(f.path, "not valid UTF-8"))
            else:
                out.new.append(f)
        elif stat == (f.size, f.mtime_ns):
            out.unchanged += 1
        else:
            row = stored[f.path]
            try:
                with open(f.abspath, "rb") as fh:
                    digest = hash_bytes(fh.read())
            except OSError as exc:
                out.problems.append(Problem(f.path, exc.strerror or str(exc)))
                continue
            if digest == row.hash:
                out.touched.append((f, row))
                out.unchanged += 1
            else:
                out.changed.append(f)
    gone = stats.keys() - {f.path for f in found.files}  # a set difference, not a loop over the stored rows
    out.deleted = [stored[path] for path in sorted(gone)]
    return out
