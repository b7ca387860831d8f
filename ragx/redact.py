"""What a user may see of a URL, a key or a server's reply: the one place credentials are removed.

Every error line (RagxError), warning (log.warn), MCP tool error and settings output passes through
`redact`. Two kinds of credential are removed:
- by shape: a URL's userinfo (scheme://user:password@host), key-like query parameters (api_key=...,
  token=...), and Authorization values (Bearer/Basic <token>);
- by value: every secret this process was handed (an API key read from the environment, a base_url's
  password), wherever it appears: a server that echoes the key back ("Incorrect API key provided:
  sk-...") or a library that quotes half a URL ("nonnumeric port: 'secret@host'") cannot show it.
"""

from __future__ import annotations

import base64
import re
import threading
import urllib.parse

__all__ = ["basic_auth", "redact", "remember", "without_userinfo"]

MASK = "***"
MIN_SECRET = 4  # shorter values ("a", "xy") would mask ordinary words; no real key is that short

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@'\"]+@")
_SECRET_PARAM = re.compile(r"(?i)\b(api[_-]?key|access[_-]?token|token|password|secret)=[^&\s'\"]+")
_AUTH_VALUE = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}")

_known: set[str] = set()
_lock = threading.Lock()


def remember(secret: str | None) -> None:
    """Mask `secret` in everything redacted from now on in this process."""
    if secret and len(secret) >= MIN_SECRET:
        with _lock:
            _known.add(secret)
            quoted = urllib.parse.quote(secret, safe="")
            if quoted != secret:  # as it appears inside a URL
                _known.add(quoted)


def redact(text: str) -> str:
    """`text` without any credential it holds (see the module's docstring)."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)  # a longer secret first: one may contain another
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    text = _USERINFO.sub(rf"\1{MASK}@", text)
    text = _SECRET_PARAM.sub(rf"\1={MASK}", text)
    return _AUTH_VALUE.sub(rf"\1 {MASK}", text)


def without_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """(`url` without its user:password@ part, (user, password) or None). The credentials are
    remembered (masked in every message from now on)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    remember(password)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), (user, password)


def basic_auth(user: str, password: str) -> str:
    """The Authorization header value for HTTP basic authentication (RFC 7617), remembered as a secret."""
    value = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    remember(value.split(" ", 1)[1])
    return value
