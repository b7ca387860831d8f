"""Embedders, the reranker and the query expander: their protocols (base), the engines (embedded ONNX,
OpenAI-compatible HTTP, sentence-transformers), the registry that builds them from settings, and the
content-keyed caches of rerank scores and expansions (each in its own SQLite file)."""
