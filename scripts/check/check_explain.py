#!/usr/bin/env python
"""Check --explain paths against the store: every hop's edge must exist with exactly the weight reported.

    python scripts/check/check_explain.py --root CORPUS --queries QUERIES.jsonl [--n 50] [--top 20]

Each query runs through the same facade as `ragx query --explain --json`; the JSON text is parsed back
(so float formatting is part of what is checked) and each step (from -> chunk, weight) is looked up in
the `edges` view of the index's SQLite store.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

from ragx import schemas
from ragx.api import Corpus


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    corpus = Corpus.open(args.root, need_index=True)
    queries = [json.loads(line)["query"] for line in Path(args.queries).read_text().splitlines() if line.strip()][: args.n]
    db = sqlite3.connect(f"file:{corpus.layout.db}?mode=ro", uri=True)
    results = steps = bad = 0
    hops_seen: dict[int, int] = {}
    for q in queries:
        doc = json.loads(schemas.dumps(schemas.document(schemas.QUERY, corpus.query(q, top=args.top, explain=True))))
        for r in doc["results"]:
            results += 1
            path = r["path"]
            if path[0]["hop"] != 0 or path[-1]["chunk_id"] != r["chunk_id"] or len(path) - 1 != r["hop"]:
                bad += 1
                print(f"malformed path for chunk {r['chunk_id']}: {path}", file=sys.stderr)
            hops_seen[r["hop"]] = hops_seen.get(r["hop"], 0) + 1
            for step in path[1:]:
                steps += 1
                a, b = sorted((step["from"], step["chunk_id"]))
                row = db.execute("SELECT weight FROM edges WHERE a = ? AND b = ?", (a, b)).fetchone()
                if row is None or row[0] != step["edge_weight"]:
                    bad += 1
                    print(f"edge {a}-{b}: store {row}, reported {step['edge_weight']}", file=sys.stderr)
    print(f"{len(queries)} queries, {results} results (by hop: {dict(sorted(hops_seen.items()))}), "
          f"{steps} edge steps checked, {bad} mismatches")
    return 1 if bad or steps == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
