"""Progress on stderr wherever it goes: plain lines with rate and ETA when stderr is a file or a pipe."""

from __future__ import annotations

import io
import re
import threading
import time

import pytest
from cli_runner import call

from ragx.progress import plain_line, progress

LINE = re.compile(r"^embedding: (done )?\d[\d,]*/\d[\d,]* texts \(\d+%\), [\d.]+ texts/s, elapsed \d+:\d\d")


def test_a_plain_line_says_done_of_total_rate_and_eta():
    assert plain_line("embedding", 500, 2000, "texts", 10.0) == "embedding: 500/2,000 texts (25%), 50.0 texts/s, elapsed 0:10, ETA 0:30"
    assert plain_line("eval", 7, None, "queries", 2.0) == "eval: 7 queries, 3.5 queries/s, elapsed 0:02"
    assert plain_line("x", 4000, 4000, "texts", 3700.0, finished=True) == "x: done 4,000/4,000 texts (100%), 1.1 texts/s, elapsed 1:01:40"


def test_lines_keep_coming_while_one_step_takes_longer_than_the_interval(monkeypatch):
    monkeypatch.delenv("RAGX_PROGRESS", raising=False)
    log = io.StringIO()  # not a terminal: plain lines
    with progress("embedding", total=10, unit="texts", stream=log, every=0.05) as advance:
        advance(3)
        time.sleep(0.4)  # one slow batch: the timer still writes
    lines = log.getvalue().splitlines()
    assert len(lines) >= 4
    assert all(line.startswith("embedding: 3/10 texts (30%)") for line in lines[:-1])
    assert lines[-1].startswith("embedding: done 3/10 texts")


def test_advance_from_many_threads_counts_every_item(monkeypatch):
    monkeypatch.delenv("RAGX_PROGRESS", raising=False)
    log = io.StringIO()
    with progress("work", total=8000, stream=log, every=60) as advance:
        workers = [threading.Thread(target=lambda: [advance(1) for _ in range(2000)]) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    assert log.getvalue().startswith("work: done 8,000/8,000 items (100%)")


def test_off_writes_nothing_and_a_failed_run_writes_no_done_line(monkeypatch):
    log = io.StringIO()
    monkeypatch.setenv("RAGX_PROGRESS", "off")
    with progress("work", total=2, stream=log) as advance:
        advance(2)
    assert log.getvalue() == ""
    monkeypatch.setenv("RAGX_PROGRESS", "plain")
    with pytest.raises(RuntimeError), progress("work", total=2, stream=log, every=60):
        raise RuntimeError("boom")
    assert "done" not in log.getvalue()


class SlowEmbedder:
    """The hash fake, a batch at a time, each batch slower than the progress interval."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_documents(self, texts, batch_size: int = 32, progress=None):
        import numpy as np

        parts = []
        for i in range(0, len(texts), 4):
            time.sleep(0.1)
            parts.append(self.inner.embed_documents(texts[i:i + 4], progress=progress))
        return np.concatenate(parts)


def test_index_with_stderr_not_a_terminal_writes_progress_lines(tmp_path, capsys, monkeypatch, fake_model):
    import ragx.models.registry as registry

    monkeypatch.setattr(registry, "make_embedder", lambda *a, **k: SlowEmbedder(fake_model))
    monkeypatch.delenv("RAGX_PROGRESS", raising=False)
    monkeypatch.setenv("RAGX_PROGRESS_SECONDS", "0.05")
    for i in range(12):
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n\nriver {i} and boat {i} and a mountain path\n")
    code, _, err = call(capsys, "index", "--root", str(tmp_path))
    assert code == 0
    lines = [line for line in err.splitlines() if line.startswith("embedding:")]
    assert len(lines) >= 3 and all(LINE.match(line) for line in lines), err
    assert lines[-1].startswith("embedding: done 12/12")


def test_a_heartbeat_line_says_only_the_elapsed_time():
    assert plain_line("indexing", 0, None, "", 65.0) == "indexing: elapsed 1:05"


def test_index_beats_before_and_after_embedding_when_stderr_is_a_file(tmp_path, capsys, monkeypatch, fake_model):
    """The rest of an index run (scan, chunk, graph, communities, BM25, write) is not silent either."""
    import ragx.index.build as build

    real = build._commit

    def slow_commit(*args, **kwargs):
        time.sleep(0.3)  # the stages after embedding, made long enough to see
        return real(*args, **kwargs)

    monkeypatch.setattr(build, "_commit", slow_commit)
    monkeypatch.delenv("RAGX_PROGRESS", raising=False)
    monkeypatch.setenv("RAGX_PROGRESS_SECONDS", "0.05")
    for i in range(3):
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\n\nriver {i}\n")
    code, _, err = call(capsys, "index", "--root", str(tmp_path))
    lines = err.splitlines()
    done = next(i for i, line in enumerate(lines) if line.startswith("embedding: done"))
    assert code == 0 and any(re.match(r"^indexing: elapsed \d+:\d\d$", line) for line in lines[done + 1:]), err
    assert lines[-1].startswith("updated:") and not any("indexing: done" in line for line in lines)  # a heartbeat ends silently
