"""ragx as an MCP server over stdio: the tools `search`, `index`, `status` and `inspect`.

`service` holds the corpus and builds the same versioned documents the CLI prints (no MCP import);
`server` wires them to the MCP Python SDK. Nothing here is imported by the other CLI commands:
`ragx mcp` imports `ragx.mcp.server` when it runs, so only that command pays for the SDK.
"""
