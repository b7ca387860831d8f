"""A pool of OpenAI-compatible embedding servers of one model, used as one Embedder.

`[embeddings] base_url` may list several servers (comma-separated); each gets `in_flight` requests at
a time. Work is a queue of batches that every free slot pulls from, so each server gets batches in
proportion to how fast it answers (its measured rate is kept and reported). A batch whose request
fails in a way another server may not (unreachable, timed out, 5xx, 429) goes back to the head of the
queue and the server rests (2 s, doubling up to a minute) before it is tried again; a batch that failed
on every server more than `max_retries + 1` times ends the run with the last error. Other errors (a
4xx, an unusable answer) end the run at once: retrying would not mend them.

A batch is one request whatever server answers it, so the vectors are the ones a single server gives
for the same batches: the caller decides the batches (ragx/index/embedding.py makes them from the
texts alone), the pool only decides where they go. Each batch's vectors are handed over exactly once.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ..errors import ProviderError
from .base import ProgressFn, check_batch
from .openai_engine import EndpointDown, OpenAIEmbedder, resolve_base_url

__all__ = ["EmbeddingPool", "split_base_urls", "stream_batches"]

T = TypeVar("T")
REST_SECONDS = 2.0
MAX_REST_SECONDS = 60.0


def split_base_urls(configured: str) -> list[str]:
    """The servers `base_url` lists (comma- or space-separated), each resolved like a single one."""
    parts = [p for p in configured.replace(",", " ").split() if p]
    return [resolve_base_url(p) for p in parts] or [resolve_base_url("")]


def _warn(message: str) -> None:
    """Every event is its own line (a server may fail, come back and fail again in one run)."""
    print(f"ragx: warning: {message}", file=sys.stderr, flush=True)


@dataclass
class _Server:
    engine: OpenAIEmbedder
    resting_until: float = 0.0
    failures: int = 0        # in a row; 0 = healthy
    failed_at: float = 0.0   # when the last failure came back (an answer to a request sent before it proves nothing)
    texts: int = 0
    seconds: float = 0.0     # summed request time (slots overlap: a rate per slot)

    @property
    def url(self) -> str:
        return self.engine.base_url

    @property
    def rate(self) -> float:
        return self.texts / self.seconds if self.seconds else 0.0


class _Queue:
    """Batches waiting, batches out, and each server's rest; one lock, one condition."""

    def __init__(self, n: int, max_attempts: int):
        self.pending: deque[int] = deque(range(n))
        self.out = 0
        self.attempts = [0] * n
        self.max_attempts = max_attempts
        self.stopped = False
        self.cond = threading.Condition()

    def take(self, server: _Server) -> int | None:
        """The next batch for `server` (waiting while it rests), or None when nothing is left."""
        with self.cond:
            while not self.stopped:
                wait = server.resting_until - time.monotonic()
                if self.pending and wait <= 0:
                    self.out += 1
                    return self.pending.popleft()
                if not self.pending and self.out == 0:
                    return None
                self.cond.wait(timeout=wait if wait > 0 else None)
            return None

    def finished(self, batch: int) -> None:
        with self.cond:
            self.out -= 1
            self.cond.notify_all()

    def failed(self, batch: int, server: _Server) -> tuple[bool, bool]:
        """Put the batch back first in line and rest the server. (whether the batch may be tried again,
        whether this is the server's first failure in a row)."""
        with self.cond:
            first = server.failures == 0
            self.out -= 1
            self.attempts[batch] += 1
            server.failures += 1
            server.failed_at = time.monotonic()
            server.resting_until = time.monotonic() + min(MAX_REST_SECONDS, REST_SECONDS * 2 ** (server.failures - 1))
            self.pending.appendleft(batch)
            self.cond.notify_all()
            return self.attempts[batch] < self.max_attempts, first

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


class EmbeddingPool:
    """:class:`~ragx.models.base.Embedder` over several servers of one model (see the module docstring)."""

    def __init__(self, engines: Sequence[OpenAIEmbedder], *, in_flight: int = 1, max_retries: int = 3,
                 notify: Callable[[str], None] = _warn):
        if not engines:
            raise ValueError("an embedding pool needs at least one server")
        if in_flight < 1:
            raise ValueError(f"embeddings.in_flight must be >= 1, got {in_flight}")
        self.servers = [_Server(e) for e in engines]
        self.in_flight, self.max_retries, self.notify = int(in_flight), int(max_retries), notify
        self._first = engines[0]

    # The identity and the tokenizer are the model's: every server serves the same one.
    @property
    def name(self) -> str:
        return self._first.name

    @property
    def dim(self) -> int:
        """Learnt from the first answer of any server; else one probe, to the first server that answers."""
        known = [s.engine.known_dim for s in self.servers if s.engine.known_dim]
        return known[0] if known else self._any_server(lambda engine: engine.dim)

    @property
    def max_tokens(self) -> int:
        return self._first.max_tokens

    def token_counter(self):
        return self._first.token_counter()

    @property
    def base_url(self) -> str:
        """Every server, as base_url lists them (what `ragx doctor` names)."""
        return ", ".join(s.url for s in self.servers)

    @property
    def served_model(self) -> str | None:
        """The model id the servers report, once one answered."""
        return next((s.engine.served_model for s in self.servers if s.engine.served_model), None)

    def __repr__(self) -> str:
        return f"EmbeddingPool({[s.url for s in self.servers]}, in_flight={self.in_flight})"

    def rates(self) -> dict[str, float]:
        """Texts per second per request slot of each server, as measured so far."""
        return {s.url: s.rate for s in self.servers}

    def embed_query(self, text: str) -> np.ndarray:
        return self._any_server(lambda engine: engine.embed_query(text))

    def _any_server(self, call: Callable[[OpenAIEmbedder], T]) -> T:
        """`call` on the fastest healthy server first; on the next one while they are down."""
        last: ProviderError | None = None
        for server in sorted(self.servers, key=lambda s: (s.failures > 0, -s.rate)):
            try:
                return call(server.engine)
            except EndpointDown as exc:
                last = exc
        assert last is not None
        raise last

    def embed_documents(self, texts: Sequence[str], batch_size: int = 32, progress: ProgressFn | None = None) -> np.ndarray:
        """Batches as one server would make them (longest first), spread over the servers."""
        n = check_batch(texts, batch_size)
        if n == 0:
            return np.empty((0, self.dim), dtype=np.float32)
        order = np.argsort(-np.fromiter((len(t) for t in texts), dtype=np.int64, count=n), kind="stable")
        batches = [order[s : s + batch_size] for s in range(0, n, batch_size)]
        out: np.ndarray | None = None
        for i, vecs in self.stream([[texts[j] for j in b] for b in batches]):
            if out is None:
                out = np.empty((n, vecs.shape[1]), dtype=np.float32)
            out[batches[i]] = vecs
            if progress is not None:
                progress(len(batches[i]))
        assert out is not None
        return out

    def stream(self, batches: Sequence[Sequence[str]]) -> Iterator[tuple[int, np.ndarray]]:
        """(batch number, its vectors) as each batch comes back, in any order, each batch once."""
        work = _Queue(len(batches), (self.max_retries + 1) * len(self.servers))
        results: queue.Queue = queue.Queue()
        for server in self.servers:
            for _ in range(self.in_flight):
                threading.Thread(target=self._serve, args=(server, batches, work, results), daemon=True).start()
        try:
            for _ in range(len(batches)):
                item = results.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            work.stop()  # slots still waiting end; a request still out ends with its own timeout

    def _serve(self, server: _Server, batches: Sequence[Sequence[str]], work: _Queue, results: queue.Queue) -> None:
        """One request slot of one server: take a batch, send it, hand its vectors over; until none is left."""
        while (batch := work.take(server)) is not None:
            started = time.monotonic()
            try:
                vecs = server.engine.embed_batch(batches[batch])
            except EndpointDown as exc:
                self._failed(server, batch, exc, work, results)
                continue
            except Exception as exc:  # noqa: BLE001 - handed to the caller's thread, raised there
                work.stop()
                results.put(exc)
                return
            with work.cond:
                came_back = server.failures > 0 and started > server.failed_at
                if came_back or not server.failures:
                    server.failures = 0
                server.texts += len(batches[batch])
                server.seconds += time.monotonic() - started
            if came_back:
                self.notify(f"embedding server {server.url} answers again; it takes batches again")
            work.finished(batch)
            results.put((batch, vecs))

    def _failed(self, server: _Server, batch: int, exc: EndpointDown, work: _Queue, results: queue.Queue) -> None:
        again, first = work.failed(batch, server)
        if not again:
            work.stop()
            results.put(exc)
            return
        if first:
            others = len(self.servers) - 1
            where = f"its batches go to the other {others} server(s)" if others else "its batches wait"
            self.notify(f"embedding server {server.url} failed ({exc.reason}); {where} while it rests "
                        f"(tried again in {REST_SECONDS:g} s, then less often); no vector is lost")


def stream_batches(embedder, batches: Sequence[Sequence[str]]) -> Iterator[tuple[int, np.ndarray]]:
    """(batch number, vectors) for each batch, each one request or model batch: through an engine that
    streams (the pool's servers concurrently; a wrapper such as the lab's vector cache), else one after
    another for an engine in this process."""
    stream = getattr(embedder, "stream", None)
    if stream is not None:
        yield from stream(batches)
        return
    for i, texts in enumerate(batches):
        yield i, embedder.embed_documents(list(texts), batch_size=max(1, len(texts)))
