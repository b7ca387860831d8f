"""`ragx mcp`: serve the corpus to coding agents over MCP (stdio). The SDK is imported only here, when run."""

# No `from __future__ import annotations`: typer would evaluate every parameter's annotation from a
# string (compile + eval) on each start-up.

from typing import Annotated

import typer

from .app import RootOpt, app


@app.command("mcp")
def mcp_command(
    root: RootOpt = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each index run and tool error on stderr.")] = False,
) -> None:
    """Serve search, index, status and inspect as MCP tools over stdio (for Claude Code, Cursor, ...).

    stdout carries only MCP messages; logs go to stderr. The tool list and the first search are answered
    before the MCP SDK has loaded.
    """
    from ..mcp.stdio import serve  # standard library only: the SDK loads while the handshake is answered

    serve(root, verbose=verbose)
