"""Repository snapshots as labelled queries: a folder of instances.jsonl and git bundles (swe-loc layout).

    instances.jsonl    one instance a line: instance_id, repo ("owner/name"), tag (a ref in the
                       repository's bundle whose tree is the repository at the issue's base commit),
                       base_commit_time, query (the issue text), gold_files, split
    bundles/<owner>__<name>.bundle

A repository's instances are replayed in commit order in ONE working folder (a clone of the bundle):
`Checkout.move_to(tag)` is `git checkout`, which writes only the files that differ from the folder's
current tree and deletes the ones the new tree lacks, so the index that follows is incremental.
Untracked files (the index in `.ragx/`) are left alone.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

SPLITS = ("train", "test", "all")


@dataclass(frozen=True)
class Instance:
    id: str
    repo: str            # owner/name
    tag: str             # the ref whose tree is the repository at the base commit
    time: int            # base commit time (unix seconds): the replay order
    query: str
    gold: tuple[str, ...]
    split: str


@dataclass(frozen=True)
class Move:
    """What one checkout changed in the working folder (paths of the git tree, text or not)."""

    tag: str
    added: int
    modified: int
    deleted: int


def _instance(obj: dict, where: str) -> Instance:
    try:
        gold = tuple(str(p) for p in obj["gold_files"])
        out = Instance(str(obj["instance_id"]), str(obj["repo"]), str(obj["tag"]), int(obj["base_commit_time"]),
                       str(obj["query"]), gold, str(obj["split"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{where}: an instance needs instance_id, repo, tag, base_commit_time, query, gold_files "
                         f"and split ({type(exc).__name__}: {exc})") from None
    if not gold or not out.query.strip() or out.repo.count("/") != 1:
        raise UsageError(f"{where}: instance {out.id} needs a query, gold files and a repo named owner/name")
    return out


def load_instances(data_dir: Path, split: str = "all", repos: list[str] | None = None) -> dict[str, list[Instance]]:
    """{repo: its instances of `split` in commit order}, repositories in name order; every bundle checked."""
    data_dir = Path(data_dir)
    if split not in SPLITS:
        raise UsageError(f"--split for repository snapshots is one of {', '.join(SPLITS)}, got {split!r}")
    path = data_dir / "instances.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UsageError(f"{path} not found: not a repository-snapshots folder (instances.jsonl, bundles/)") from None
    found: dict[str, list[Instance]] = {}
    for n, line in enumerate(lines, start=1):
        if line.strip():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{path}:{n}: malformed JSON ({exc.msg})") from None
            inst = _instance(obj, f"{path}:{n}")
            if split in ("all", inst.split):
                found.setdefault(inst.repo, []).append(inst)
    unknown = sorted(set(repos or ()) - set(found))
    if unknown:
        raise UsageError(f"--repo {unknown[0]}: no {split} instances of it in {path} (has: {', '.join(sorted(found))})")
    chosen = {r: sorted(found[r], key=lambda i: (i.time, i.id)) for r in sorted(found) if not repos or r in repos}
    if not chosen:
        raise UsageError(f"{path} holds no {split} instances")
    for repo in chosen:
        if not bundle_path(data_dir, repo).is_file():
            raise UsageError(f"{bundle_path(data_dir, repo)} not found: every repository needs its git bundle")
    return chosen


def bundle_path(data_dir: Path, repo: str) -> Path:
    return Path(data_dir) / "bundles" / f"{repo.replace('/', '__')}.bundle"


def cache_dir_for(data_dir: Path) -> Path:
    """Where `ragx eval snapshots` keeps a data folder's working folders and their indexes (per data path)."""
    from ..models.onnx_export import default_cache_dir

    resolved = Path(data_dir).resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:8]
    return default_cache_dir() / "snapshots" / f"{resolved.name}-{digest}"


def _git(folder: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True)
    except FileNotFoundError:
        raise UsageError("repository snapshots need git on PATH") from None
    except subprocess.CalledProcessError as exc:
        raise UsageError(f"git {' '.join(args[:2])} in {folder} failed: {exc.stderr.strip().splitlines()[-1:]}") from None
    return done.stdout


class Checkout:
    """One working folder per repository, a clone of its bundle, moved from tree to tree."""

    def __init__(self, bundle: Path, folder: Path):
        self.bundle, self.folder = Path(bundle), Path(folder)

    def ensure(self) -> None:
        if (self.folder / ".git").exists():
            return
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        _git(self.folder.parent, "clone", "--quiet", "--no-checkout", str(self.bundle.resolve()), self.folder.name)

    def current(self) -> str | None:
        """The tag the folder holds (recorded by the last move), None for a fresh clone's empty folder."""
        marker = self.folder / ".git" / "ragx-snapshot"
        if not marker.is_file():
            return None
        return marker.read_text(encoding="utf-8").strip() or None

    def move_to(self, tag: str) -> Move:
        """Bring the folder to `tag`'s tree, writing only what differs; what changed, counted."""
        self.ensure()
        before = self.current()
        if before is None:
            added, modified, deleted = len(_git(self.folder, "ls-tree", "-r", "-z", "--name-only", tag).split("\0")) - 1, 0, 0
        else:
            status = _git(self.folder, "diff", "--no-renames", "--name-status", "-z", before, tag).split("\0")[::2]
            added, modified, deleted = (status.count(s) for s in ("A", "M", "D"))
        _git(self.folder, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--force", "--detach", tag)
        (self.folder / ".git" / "ragx-snapshot").write_text(tag + "\n", encoding="utf-8")
        return Move(tag, added, modified, deleted)
