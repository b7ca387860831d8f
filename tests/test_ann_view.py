"""A mapped ANN file that holds deleted entries opens and searches (issue 42, item 0).

usearch 2.23 mapping such a file with key lookups off corrupted the heap and aborted the process
(SIGABRT), so each case runs in a child process: an abort is this test failing, not the suite dying.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
# ../shared beside the main checkout (/work/main) or beside the worktrees' folder (/work/wt/NAME)
REPRO = next((p / "shared" / "repro" / "usearch-view-abort" for p in (REPO.parent, REPO.parent.parent)
              if (p / "shared" / "repro").is_dir()), REPO / "missing")


def _child(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


_OPEN_AND_SEARCH = """
import sys
from pathlib import Path
import numpy as np
from ragx.index.vectors import VectorIndex, _View
view = _View.open(Path(sys.argv[1]))
print(len(view))
index = VectorIndex.load(Path(sys.argv[1]), view.ndim)
ids, _ = index.search(np.ones(view.ndim, np.float32), 5, len(view))
print(len(ids))
"""


def _file_with_deleted(path: Path, n: int, removed: int) -> Path:
    from usearch.index import Index

    index = Index(ndim=32, metric="cos", dtype="i8", connectivity=16)
    index.add(np.arange(n), np.random.default_rng(0).standard_normal((n, 32)).astype(np.float32))
    index.remove(np.arange(removed))
    index.save(str(path))
    return path


@pytest.mark.parametrize("n, removed", [(100, 5), (3000, 38)])
def test_a_file_with_deleted_entries_opens_and_searches(tmp_path, n, removed):
    path = _file_with_deleted(tmp_path / "vectors.hnsw", n, removed)
    done = _child(_OPEN_AND_SEARCH, str(path))
    assert done.returncode == 0, (done.returncode, done.stderr[-400:])
    assert done.stdout.split() == [str(n - removed), "5"]


@pytest.mark.skipif(not (REPRO / "vectors.hnsw").exists(), reason="the shared repro folder is not beside this checkout")
def test_the_pytest_history_file_opens(tmp_path):
    """The generation file from the swe-loc replay that aborted every query (5,486 live, 38 deleted)."""
    done = _child(_OPEN_AND_SEARCH, str(REPRO / "vectors.hnsw"))
    assert done.returncode == 0, (done.returncode, done.stderr[-400:])
    assert done.stdout.split() == ["5486", "5"]


_INDEX_DELETE_QUERY = """
import sys
from pathlib import Path
import fakes_registration
import ragx.index.stored_vectors as stored_vectors
from ragx.cli.main import run
stored_vectors.DELTA_MIN_ROWS = 4  # compact after a few deletions (an eighth of the chunks: not enough to rebuild)

def ragx(*args):
    try:
        run(list(args))
    except SystemExit as exc:
        if exc.code:
            sys.exit(f"ragx {args[0]} exited {exc.code}")

root = Path(sys.argv[1])
ragx("index", "--root", str(root))
for path in sorted(root.glob("*-0.md")):
    path.unlink()
ragx("index", "--root", str(root))
ragx("query", "oven bread", "--root", str(root), "--json")
"""


def test_an_index_run_that_deletes_chunks_leaves_a_queryable_index(tmp_path):
    """The writer's way to such a file: a compacting run removes more chunks than it adds."""
    from fakes import make_corpus
    from fakes_registration import RAGX_TOML

    make_corpus(tmp_path, n_per_topic=8)
    (tmp_path / "ragx.toml").write_text(RAGX_TOML, encoding="utf-8")
    done = _child(_INDEX_DELETE_QUERY, str(tmp_path))
    assert done.returncode == 0, (done.returncode, done.stderr[-600:])


_FULL_WITHOUT_OPENING = """
import os, sys
from pathlib import Path
import fakes_registration
import ragx.index.vectors as vectors
from ragx.cli.main import run

def abort(*args, **kwargs):  # what a native crash in the reader does
    os.abort()

vectors._View.open = abort
vectors.VectorIndex.load = abort
try:
    run(["index", "--full", "--root", sys.argv[1]])
except SystemExit as exc:
    sys.exit(exc.code)
"""


def test_a_full_run_rebuilds_without_opening_the_ann_file(tmp_path):
    """Whatever a damaged ANN file does to its reader, `ragx index --full` builds a new one from the
    stored vectors and texts without opening it."""
    from fakes import make_corpus
    from fakes_registration import RAGX_TOML

    make_corpus(tmp_path, n_per_topic=4)
    (tmp_path / "ragx.toml").write_text(RAGX_TOML, encoding="utf-8")
    first = _child(_INDEX_DELETE_QUERY.replace('"*-0.md"', '"no-such-*"'), str(tmp_path))
    assert first.returncode == 0, first.stderr[-400:]
    (tmp_path / "astronomy-0.md").write_text("# new\n\nA new note about telescopes and bread.\n", encoding="utf-8")
    done = _child(_FULL_WITHOUT_OPENING, str(tmp_path))
    assert done.returncode == 0, (done.returncode, done.stderr[-400:])
    assert "index holds" in done.stderr + done.stdout
