"""ragx as an MCP server over stdio (tools `search`, `index`, `status`, `inspect`): service builds the
CLI's versioned documents (no MCP import), server wires them to the MCP SDK, stdio answers the handshake
before the SDK loads. Only `ragx mcp` imports this package."""
