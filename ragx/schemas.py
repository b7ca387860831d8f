"""The versioned JSON documents ragx prints. Every `--json` output is exactly one of these.

A consumer checks `schema` first; a change that removes or renames a field gets a new version.
"""

from __future__ import annotations

import json
from typing import Any

STATUS = "ragx.status.v1"
INDEX = "ragx.index.v1"
CONFIG = "ragx.config.v1"
VERSION = "ragx.version.v1"
DATA = "ragx.data.v1"
QUERY = "ragx.query.v1"
FILES = "ragx.files.v1"
INSPECT = "ragx.inspect.v1"
EVAL = "ragx.eval.v2"  # v2: {"datasets": [per-dataset documents], "summary", "reference"}
EVAL_SNAPSHOTS = "ragx.eval-snapshots.v1"  # `ragx eval snapshots`: {"repositories", "pooled", "steps", "reference"}
DOCTOR = "ragx.doctor.v1"
ERROR = "ragx.error.v1"
GLOBAL = "ragx.global.v1"
EXPORT = "ragx.export.v1"
IMPORT = "ragx.import.v1"
MODELS = "ragx.models.v1"

# How the `evidence.reason` of a query without evidence begins (search/evidence.py writes it): a shell
# tells that empty answer from the others by it.
NO_EVIDENCE = "no relevant evidence"


def document(schema: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"schema": schema, **payload}


def dumps(doc: dict[str, Any]) -> str:
    """Stable text: keys in insertion order, floats as Python's shortest round-trip repr."""
    return json.dumps(doc, ensure_ascii=False, allow_nan=False)


def group_by_file(results: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A ragx.query.v1 document's results of each file together, files in the order of their best (first)
    result: how every shell shows them (the CLI's human output, the search page)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r["file"], []).append(r)
    return list(groups.values())
