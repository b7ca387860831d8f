"""swe-loc, BM25 leg alone: syntax chunks (their headers) and identifier-aware terms, each on and off.

For each instance of a split: its tree (git archive of its tag), every file ragx would index, chunked
with today's column-0 chunker or by syntax (ragx/ingest/code.py), BM25 postings with FTS5's terms or with
identifiers' parts and joined forms added (ragx/index/identifiers.py); the issue text as the query
(old: `query_words`, new: `bm25_terms`); a file scores its best chunk (k1 1.2, b 0.75, FTS5's idf).
Acc@k (the gold file within the top k; one gold file per instance) and MRR, paired tests against
old/old. No embedding: the dense leg is measured by `ragx eval` over the snapshots.

    python research/2026-12-05-code-bm25.py train      # choose (requests, flask, seaborn)
    python research/2026-12-05-code-bm25.py test       # pytest: reported, never chosen on
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from ragx.index import fts_tokens, identifiers
from ragx.index.lexicon import Lexicon, LexiconPart
from ragx.ingest import code
from ragx.ingest.chunk import ChunkSettings, chunk_text
from ragx.ingest.discover import NotUTF8Error, discover, read_text
from ragx.search import lexical

DATA = Path(os.environ.get("RAGX_DATA", "/work/shared/data")) / "swe-loc"
WORK = Path(os.environ.get("SWE_LOC_WORK", "/tmp/swe-loc-trees"))
SETTINGS: dict[str, tuple[bool, bool | str]] = {"old/old": (False, False), "syntax/old": (True, False), "old/ident": (False, True), "syntax/ident": (True, True)}


def _parts_without_chains(piece: str) -> list[str]:
    """A variant: each dotted component's own joined form (register_blueprint -> registerblueprint), never
    the whole dotted chain's."""
    return [p for part in piece.split(".") for p in identifiers.identifier_parts(part)]


def _camel_only(piece: str) -> list[str]:
    """A variant: camelCase parts only, no joined forms."""
    return [p for p in identifiers.identifier_parts(piece) if " " in p]


VARIANTS = {"ident": identifiers.with_identifier_parts,
            "nochain": lambda piece: " ".join([piece, *_parts_without_chains(piece)]),
            "camel": lambda piece: " ".join([piece, *_camel_only(piece)])}
if os.environ.get("CODE_BM25_VARIANTS"):  # the identifier variants, each with syntax chunks
    SETTINGS = {"syntax/old": (True, False), **{f"syntax/{v}": (True, v) for v in VARIANTS}}
if os.environ.get("CODE_BM25_IDENT_ONLY"):  # identifier terms alone, with syntax chunks
    SETTINGS = {"syntax/old": (True, False), "syntax/ident": (True, True)}


def tree(instance: dict) -> Path:
    repo = instance["repo"].replace("/", "__")
    bare, out = WORK / f"{repo}.git", WORK / instance["instance_id"]
    if not bare.exists():
        subprocess.run(["git", "clone", "-q", "--bare", str(DATA / "bundles" / f"{repo}.bundle"), str(bare)], check=True)
    if not out.exists():
        out.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(bare), "archive", f"refs/tags/swe/{instance['instance_id']}"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def files_of(root: Path) -> list[tuple[str, bytes, str]]:
    out = []
    for f in discover(root).files:
        try:
            data, text = read_text(f.abspath)
        except (NotUTF8Error, OSError, ValueError):
            continue
        out.append((f.path, data, text))
    return out


def rank(files: list[tuple[str, bytes, str]], query: str, syntax: bool, ident: bool | str, counter) -> list[str]:
    original = code.definitions
    fts_tokens._shared = None  # a fresh tokenizer: its remembered words were cut under the other setting
    fts_tokens.with_identifier_parts = VARIANTS[ident if isinstance(ident, str) else "ident"] if ident else (lambda piece: piece)
    code.definitions = original if syntax else (lambda path, data, text: None)
    try:
        texts, owner = [], []
        for i, (path, data, text) in enumerate(files):
            for c in chunk_text(path, data, text, counter, ChunkSettings()):
                texts.append(c.embed_text)
                owner.append(i)
        ids = np.arange(len(texts))
        lexicon = Lexicon(LexiconPart.build(ids, texts), LexiconPart.empty(), ids)
        terms = lexical.bm25_terms(query) if ident else fts_tokens.shared().of_words(lexical.query_words(query))
        hit, scores = lexicon.matches(terms)
    finally:
        code.definitions = original
        fts_tokens.with_identifier_parts = identifiers.with_identifier_parts
        fts_tokens._shared = None
    best = np.zeros(len(files))
    np.maximum.at(best, np.asarray(owner)[hit], scores)
    order = np.lexsort((np.arange(len(files)), -best))
    return [files[i][0] for i in order if best[i] > 0]


def main(split: str) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from wordpiece import wordpiece_counter

    from ragx.eval.stats import paired

    counter = wordpiece_counter()
    instances = [json.loads(line) for line in (DATA / "instances.jsonl").read_text().splitlines() if line.strip()]
    instances = [i for i in instances if i["split"] == split]
    ranks: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for inst in instances:
        files = files_of(tree(inst))
        gold = set(inst["gold_files"])
        for name, (syntax, ident) in SETTINGS.items():
            ranked = rank(files, inst["query"], syntax, ident, counter)
            ranks[name].append(next((k + 1 for k, p in enumerate(ranked) if p in gold), float("inf")))
        print(inst["instance_id"], {n: r[-1] for n, r in ranks.items()}, file=sys.stderr)
    first = next(iter(ranks))
    base = np.array(ranks[first])
    print(f"| {split} ({len(instances)}) | Acc@1 | Acc@5 | Acc@10 | MRR | MRR vs {first} (p) |")
    for name, r in ranks.items():
        r = np.array(r)
        rr, base_rr = 1 / r, 1 / base
        test = paired(rr, base_rr)
        print(f"| {name} | {np.mean(r <= 1):.3f} | {np.mean(r <= 5):.3f} | {np.mean(r <= 10):.3f} | {rr.mean():.3f} | "
              f"{test.diff:+.3f} (p {test.p:.2f}) |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "train")
