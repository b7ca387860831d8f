"""A tool call's result as the MCP wire carries it (a `CallToolResult` as a plain dict), without the SDK.

The one place a tool's outcome becomes a result: the SDK's server (`server.py`) validates these dicts
into its `CallToolResult`, and the fast path (`fast.py`) sends them as they are;
tests/test_mcp_fast.py holds the two answers equal.

Errors never end the server: a RagxError comes back as a tool error (isError) whose text is the one
line the CLI prints after "ragx: error:"; anything unexpected as "internal error in <tool>: ..." with
the traceback logged to stderr.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .. import schemas
from ..errors import as_ragx_error
from ..redact import redact
from .stdio import shown

log = logging.getLogger("ragx.mcp")


def ok(doc: dict[str, Any]) -> dict[str, Any]:
    """A document as the structured content, and as compact JSON text (what `ragx <command> --json` prints)."""
    text = schemas.dumps(doc)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a path whose bytes are not UTF-8 (the corpus root's name): shown as \udcNN
        doc = _shown(doc)
        text = schemas.dumps(doc)
    return {"content": [{"type": "text", "text": text}], "isError": False, "structuredContent": doc}


def _shown(value: Any) -> Any:
    """`value` with every string JSON could not carry as UTF-8 shown as the CLI shows it (ragx.mcp.stdio.shown)."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {_shown(k): _shown(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shown(v) for v in value]
    return value


def failed(message: str) -> dict[str, Any]:
    # shown: a message naming a path that is not UTF-8 (the corpus root's) must still reach the client
    return {"content": [{"type": "text", "text": shown(redact(message))}], "isError": True}


def answer(tool: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one tool call; every failure becomes a tool error and the server goes on."""
    try:
        return ok(work())
    except Exception as exc:  # a crash in one call must not end the server
        known = as_ragx_error(exc)  # a RagxError, or a disk or SQLite failure: the CLI's very line
        if known is not None:
            log.info("%s: %s", tool, known)
            return failed(str(known))
        log.exception("%s failed unexpectedly", tool)
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return failed(f"internal error in {tool}: {type(exc).__name__}" + (f": {first}" if first else ""))
