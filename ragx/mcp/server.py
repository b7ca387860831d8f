"""`ragx mcp`: the MCP server over stdio, built on the official MCP Python SDK (`mcp` 2.x, MCPServer).

Four tools, each returning one versioned ragx document as structured content, and the same document
as compact JSON text (what `ragx <command> --json` prints): `search` (ragx.query.v1 / ragx.files.v1),
`index` (ragx.index.v1), `status` (ragx.status.v1) and `inspect` (ragx.inspect.v1).

Errors never end the server: a RagxError comes back as a tool error (isError) whose text is the
one line the CLI prints after "ragx: error:" (ragx.mcp.results); a bad argument as a one-line
"invalid argument ..." error; anything unexpected as "internal error: ..." with the traceback logged
to stderr.

stdout carries protocol messages only. While serving, file descriptor 1 points at stderr and the
protocol goes to a private duplicate (see `ragx.mcp.stdio`), so a stray print (here, in a library, or
in a C extension) lands on stderr; ragx itself logs to stderr and reports index progress as MCP
progress notifications.

`ragx mcp` runs `ragx.mcp.stdio.serve`: `ragx.mcp.fast` answers the handshake, the tool list and the
first read-only calls before this module (and so the SDK) is imported, then the server built here
serves the session (the fast path still answering the read-only calls whose arguments plainly fit).
No onnxruntime and no torch at start-up: the first query is embedded in numpy (prepared while the
client lists tools), the session loads after it, and both stay warm in the one `Corpus` of the process.
"""

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio.from_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field, StrictBool, StrictInt, StrictStr, ValidationError

from .. import __version__
from ..inspect_args import ALIASES, TARGETS
from . import results
from .service import Service
from .stdio import NAME, TITLE, instructions

log = logging.getLogger("ragx.mcp")

# Every tool returns a JSON object (a ragx.*.v1 document): advertised as the output schema.
Document = Annotated[CallToolResult, dict[str, Any]]

READ_ONLY = {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True, "open_world_hint": False}

# What `inspect` accepts as `what`: exactly what the CLI and the API accept (ragx.inspect_args), aliases
# included; documents name the target as in TARGETS.
INSPECT_WHAT = (*TARGETS, *ALIASES)
if TYPE_CHECKING:
    InspectWhat = str
else:
    InspectWhat = Literal[INSPECT_WHAT]
_ALIAS_NOTE = "".join(f" {alias} is read as {name}." for alias, name in ALIASES.items())


class _Server(MCPServer):
    """MCPServer whose argument errors are one line, like the CLI's, and which refuses unknown arguments."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None):
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            known = set(tool.parameters.get("properties", {}))
            unknown = sorted(set(arguments) - known)
            if unknown:
                raise ToolError(
                    f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} for {name} "
                    f"(accepted: {', '.join(sorted(known)) or 'none'})"
                )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_one_line(exc.__cause__)) from exc.__cause__
            raise


def _one_line(exc: ValidationError) -> str:
    """A pydantic validation error as one line: 'invalid argument top: ... (got 'many')'."""
    parts = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e["loc"]) or "arguments"
        if e["type"] == "missing":
            parts.append(f"missing argument {where}")
        else:
            parts.append(f"invalid argument {where}: {e['msg']} (got {e.get('input')!r})")
    return "; ".join(parts)


def _answer(tool: str, work: Callable[[], dict[str, Any]]) -> CallToolResult:
    """Run one tool call (ragx.mcp.results: the one place an outcome becomes a result) as the SDK's type."""
    return CallToolResult.model_validate(results.answer(tool, work))


def build_server(service: Service) -> MCPServer:
    """The MCP server for one corpus; `service` holds its one `Corpus`."""
    server = _Server(
        name=NAME,
        title=TITLE,
        version=__version__,
        instructions=instructions(service.root),
        log_level="WARNING",
    )
    _add_search(server, service)
    _add_index(server, service)
    _add_status(server, service)
    _add_inspect(server, service)
    return server


def _add_search(server: MCPServer, service: Service) -> None:
    @server.tool(annotations=ToolAnnotations(title="Search the corpus", **READ_ONLY))
    def search(
        query: Annotated[str, Field(description="What to look for, in natural language or keywords.")],
        top: Annotated[
            StrictInt | None, Field(ge=1, description="How many results (default: the corpus's search.top, usually 10).")
        ] = None,
        files_only: Annotated[
            StrictBool, Field(description="Rank files instead of chunks (schema ragx.files.v1): one entry per file with its best chunk's lines.")
        ] = False,
        explain: Annotated[StrictBool, Field(description="Add why each result ranked: its seed ranks in the dense and BM25 lists (with graph, also the edges that led to it).")] = False,
        graph: Annotated[StrictBool, Field(description=(
            "Also spread heat over the similarity graph (off by default: it showed no measured gain). Not with no_graph."))] = False,
        no_graph: Annotated[StrictBool, Field(description=(
            "No heat propagation over the similarity graph (the default unless the corpus config turns it on). Not with graph."))] = False,
        no_lexical: Annotated[StrictBool, Field(description="Fast mode: no BM25 leg (dense vectors only).")] = False,
        no_rerank: Annotated[StrictBool, Field(description="Fast mode: skip the cross-encoder reranker (when one is configured).")] = False,
        no_expand: Annotated[StrictBool, Field(description="Fast mode: skip LLM query expansion (when enabled).")] = False,
        no_evidence_check: Annotated[StrictBool, Field(description=(
            "Return the closest results even when nothing looks relevant; `evidence.match` still says so. "
            "Use it after an empty answer whose `evidence.reason` says 'no relevant evidence'."))] = False,
    ) -> Document:
        """Search the corpus by meaning. Returns ranked chunks (schema ragx.query.v1): each result has
        `file` (path relative to the corpus root), `line_start`/`line_end` (1-based, inclusive), byte
        offsets, `score` with its breakdown, and the chunk `text` (cut at 600 characters, `truncated`
        says so). With files_only, ranked files (schema ragx.files.v1). Same JSON as
        `ragx query --json`. The first search loads the embedding model; later ones are fast."""
        return _answer("search", lambda: service.search(
            query, top=top, files_only=files_only, explain=explain,
            graph=graph, no_graph=no_graph, no_lexical=no_lexical, no_rerank=no_rerank, no_expand=no_expand,
            no_evidence_check=no_evidence_check,
        ))


def _add_index(server: MCPServer, service: Service) -> None:
    @server.tool(annotations=ToolAnnotations(
        title="Update the index", read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False,
    ))
    def index(
        ctx: Context,
        path: Annotated[
            str | None,
            Field(description="Only refresh this file or folder (relative to the corpus root, or absolute inside it). Default: the whole corpus."),
        ] = None,
    ) -> Document:
        """Bring the index up to date with the files: index new and changed files, drop deleted ones,
        repair the similarity graph around them (incremental; never touches the files themselves, only
        the corpus's .ragx/ folder). Call it after editing files so that search sees the edits.
        Returns the index report (schema ragx.index.v1, like `ragx index --json`): files new/changed/
        deleted/unchanged, chunks embedded, totals, seconds. Sends progress notifications while
        embedding when the client asks for progress."""

        def progress(done: int, total: int) -> None:
            anyio.from_thread.run(ctx.report_progress, done, total, "embedding chunks")

        return _answer("index", lambda: service.index(path, progress=progress))


def _add_status(server: MCPServer, service: Service) -> None:
    @server.tool(annotations=ToolAnnotations(title="Index status", **READ_ONLY))
    def status() -> Document:
        """What the index holds (files, chunks, edges, communities, model, generation), whether it is
        consistent, and `drift`: how many files are new, changed or deleted since the last index run
        (schema ragx.status.v1, like `ragx status --json`). If drift is not all zero, or a notice says an
        upgrade left work to the next index run, call `index`; a notice naming a setting changed since
        indexing asks for `ragx index --full`, which this server does not run: tell the user. Cheap:
        loads no model."""
        return _answer("status", service.status)


def _add_inspect(server: MCPServer, service: Service) -> None:
    @server.tool(annotations=ToolAnnotations(title="Look inside the index", **READ_ONLY))
    def inspect(
        what: Annotated[
            InspectWhat,
            Field(description="chunk: one chunk by id; file: a file's chunks; neighbors: a chunk's graph neighbours; "
                              "communities: all Leiden communities; community: one community's chunks." + _ALIAS_NOTE),
        ],
        arg: Annotated[
            StrictInt | StrictStr | None,  # strict: `true` is not chunk 1
            Field(description="The chunk id (chunk, neighbors), the file path relative to the corpus root (file), "
                              "or the community number (community); omitted for communities."),
        ] = None,
    ) -> Document:
        """Look inside the index (schema ragx.inspect.v1, like `ragx inspect --json`): a chunk's text and
        location, a file's chunks with their line ranges, a chunk's graph neighbours with edge weights,
        or the Leiden communities of the similarity graph."""
        return _answer("inspect", lambda: service.inspect(what, arg))
