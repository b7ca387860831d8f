"""ragx: local semantic search that follows the similarity graph. api.Corpus is the facade the shells
(cli, mcp) use; below it eval, search, index, ingest, models and scoring, each importing only the floors
under it (pyproject.toml's import-linter contracts); config, errors, log, schemas beside them."""

__version__ = "0.2.0"
