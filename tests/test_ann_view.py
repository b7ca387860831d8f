"""ANN files holding deleted entries: never written, never opened, searched exactly (issue 42, item 0).

usearch 2.23 opening such a file (mapped or loaded) corrupts the heap and aborts the process (SIGABRT),
so each case that could reach it runs in a child process: an abort is this test failing, not the suite
dying.
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


def _child(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env=env)


def _file_with_deleted(path: Path, n: int, removed: int) -> Path:
    from usearch.index import Index

    index = Index(ndim=32, metric="cos", dtype="i8", connectivity=16)
    index.add(np.arange(n), np.random.default_rng(0).standard_normal((n, 32)).astype(np.float32))
    index.remove(np.arange(removed))
    index.save(str(path))
    return path


_OPEN = """
import sys
from pathlib import Path
from ragx.index.vectors import DeletedEntriesError, VectorIndex, _View
for open_it in (lambda p: _View.open(p), lambda p: VectorIndex.load(p, 32)):
    try:
        open_it(Path(sys.argv[1]))
        print("opened")
    except DeletedEntriesError as exc:
        print("refused")
"""


@pytest.mark.parametrize("n, removed", [(100, 5), (540, 500), (3000, 38)])
def test_a_file_with_deleted_entries_is_refused_not_opened(tmp_path, n, removed):
    path = _file_with_deleted(tmp_path / "vectors.hnsw", n, removed)
    done = _child(_OPEN, str(path))
    assert done.returncode == 0, (done.returncode, done.stderr[-400:])
    assert done.stdout.split() == ["refused", "refused"]


@pytest.mark.skipif(not (REPRO / "vectors.hnsw").exists(), reason="the shared repro folder is not beside this checkout")
def test_the_pytest_history_file_is_refused_and_its_predecessor_opens():
    """The generation file from the swe-loc replay that aborted every query (5,486 live, 38 deleted)."""
    done = _child(_OPEN, str(REPRO / "vectors.hnsw"))
    assert done.returncode == 0, (done.returncode, done.stderr[-400:])
    assert done.stdout.split() == ["refused", "refused"]
    done = _child(_OPEN.replace("VectorIndex.load(p, 32)", "VectorIndex.load(p, 384)"), str(REPRO / "vectors-previous-generation.hnsw"))
    assert done.stdout.split() == ["opened", "opened"], done.stderr[-400:]


def test_saving_drops_the_slots_removals_freed(tmp_path):
    from ragx.index.vectors import VectorIndex, holds_deleted

    vectors = np.random.default_rng(1).standard_normal((300, 32)).astype(np.float32)
    index = VectorIndex.build(np.arange(300), vectors)
    index.remove(np.arange(0, 300, 2))
    index.add(np.arange(1000, 1010), vectors[:10])  # refills 10 of the 150 freed slots
    index.save(tmp_path / "vectors.hnsw")
    assert not holds_deleted(tmp_path / "vectors.hnsw")
    saved = VectorIndex.load(tmp_path / "vectors.hnsw", 32)
    assert len(saved.index) == 160
    ids, _ = saved.search(vectors[101], 1, 160)
    assert ids.tolist() == [101]


def _ragx_script(body: str) -> str:
    return f"""
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
            sys.exit(f"ragx {{args[0]}} exited {{exc.code}}")

root = Path(sys.argv[1])
{body}
"""


_INDEX_DELETE_QUERY = _ragx_script("""
ragx("index", "--root", str(root))
for path in sorted(root.glob("*-0.md")):
    path.unlink()
ragx("index", "--root", str(root))
ragx("query", "oven bread", "--root", str(root), "--json")
ragx("status", "--deep", "--root", str(root))
""")


@pytest.fixture
def corpus(tmp_path):
    from fakes import make_corpus
    from fakes_registration import RAGX_TOML

    make_corpus(tmp_path, n_per_topic=8)
    (tmp_path / "ragx.toml").write_text(RAGX_TOML, encoding="utf-8")
    return tmp_path


def test_an_index_run_that_deletes_chunks_leaves_a_queryable_index(corpus):
    """The writer's way to such a file: a compacting run that removes more chunks than it adds (on
    d78b077 the query after it aborted)."""
    done = _child(_INDEX_DELETE_QUERY, str(corpus))
    assert done.returncode == 0, (done.returncode, done.stderr[-600:])
    from ragx.index.vectors import holds_deleted

    assert not holds_deleted(max(corpus.glob(".ragx/gen-*")) / "vectors.hnsw")


_PLANT = """
import sys
from pathlib import Path
sys.path.insert(0, str(Path(sys.argv[2])))
from fault_suite import plant_deleted_entries
plant_deleted_entries(Path(sys.argv[1]))
"""


def test_an_index_whose_ann_file_holds_deleted_entries_is_searched_exactly_then_rewritten(corpus):
    """A file from before the fix: queries and status --deep work (exact search), and the next index
    run with a change rewrites it."""
    from ragx.index.vectors import holds_deleted

    done = _child(_ragx_script('ragx("index", "--root", str(root))'), str(corpus))
    assert done.returncode == 0, done.stderr[-400:]
    planted = _child(_PLANT, str(corpus / ".ragx"), str(REPO / "scripts" / "check"))
    assert planted.returncode == 0, planted.stderr[-400:]
    assert holds_deleted(max(corpus.glob(".ragx/gen-*")) / "vectors.hnsw")
    (corpus / "new.md").write_text("# new\n\nA note about sails and bread.\n", encoding="utf-8")
    done = _child(_ragx_script("""
ragx("query", "oven bread", "--root", str(root), "--json")
ragx("status", "--deep", "--root", str(root))
ragx("index", "--root", str(root))
ragx("query", "oven bread", "--root", str(root), "--json")
"""), str(corpus))
    assert done.returncode == 0, (done.returncode, done.stderr[-600:])
    assert '"file": "cooking-' in done.stdout
    assert not holds_deleted(max(corpus.glob(".ragx/gen-*")) / "vectors.hnsw")


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


def test_a_full_run_rebuilds_without_opening_the_ann_file(corpus):
    """Whatever a damaged ANN file does to its reader, `ragx index --full` builds a new one from the
    stored vectors and texts without opening it."""
    first = _child(_ragx_script('ragx("index", "--root", str(root))'), str(corpus))
    assert first.returncode == 0, first.stderr[-400:]
    (corpus / "astronomy-0.md").write_text("# new\n\nA new note about telescopes and bread.\n", encoding="utf-8")
    done = _child(_FULL_WITHOUT_OPENING, str(corpus))
    assert done.returncode == 0, (done.returncode, done.stderr[-400:])
    assert "index holds" in done.stderr + done.stdout
