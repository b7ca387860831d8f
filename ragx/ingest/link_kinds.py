"""The kinds of rows in the link table (ragx/ingest/links.py explains each). A leaf module: a query
resolves link edges and tag filters by kind without loading the link and frontmatter parsers."""

from __future__ import annotations

LINK, WIKILINK, EMBED, TAG, ALIAS = "link", "wikilink", "embed", "tag", "alias"
PATH_KINDS = (LINK, WIKILINK, EMBED)  # kinds whose target is a file path
