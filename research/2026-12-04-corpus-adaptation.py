"""The embedder adapted to each collection without labels (issue 13): titles as pseudo-queries.

The fine-tune study (2026-12-02-finetune.py) trained the bundled all-MiniLM-L6-v2 on the training
questions and lost held out. This one uses no question and no label at all: each collection teaches
the model its own vocabulary through (title, body) pairs of its own documents, the way a user's
corpus could at index time. The model is adapted once per collection (SciFact's train and test
splits share one corpus, so one model) and the collection re-indexed with it.

Pairs, fixed before running: every document with a title (the BEIR `title` field, else the YAML
frontmatter's `title:`); the pseudo-query is the title, the document its text with the frontmatter
removed and a leading copy of the title dropped (Cranfield's texts start with their title), kept if
it has at least 20 words; at most 1,600 pairs per collection, sampled with seed 0. The training recipe
is the fine-tune study's, unchanged (multiple-negatives ranking loss, batch 32 with no title twice in
a batch, one epoch, AdamW lr 2e-5, 10% warm-up, window 256, seed 0). Scoring: the shipped defaults over
each split's pass (dense 100 + BM25 100 seeds, graph off): equal candidates, only the embedder differs.

Protocol: the training splits decide (nothing is tuned: one recipe); the test splits run only if the
mean gain over SciFact train and dendron-vault train is positive.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-corpus-adaptation.py adapt scifact dendron-vault
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-corpus-adaptation.py study scifact-train dendron-vault-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-corpus-adaptation.py compare adapt <splits>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-04-corpus-adaptation.py pooled adapt <four test splits>

Models go to $RAGX_CACHE_DIR/research-prf/minilm-adapt-<collection>, per-query results to
$RAGX_CACHE_DIR/research-prf/adapt-results.json.
"""

from __future__ import annotations

import json
import random
import re
import sys

from lab.studies import harness
from lab.studies.harness import run_command
from lab.studies.research_scripts import load_script

finetune = load_script("2026-12-02-finetune.py")
RESULTS = harness.OUT / "adapt-results.json"
MAX_PAIRS, MIN_WORDS, SEED = 1600, 20, 0
FRONTMATTER = re.compile(r"\A---\n(.*?)\n---\n?", re.S)
TITLE_LINE = re.compile(r"^title:\s*(.*?)\s*$", re.M)


def model_for(coll: str):
    return harness.OUT / f"minilm-adapt-{coll}"


def title_and_body(doc: dict) -> tuple[str, str]:
    """A document's title (BEIR field, else its frontmatter's) and its text without frontmatter or a
    leading copy of the title."""
    text, title = doc["text"], (doc.get("title") or "").strip()
    front = FRONTMATTER.match(text)
    if front:
        text = text[front.end():]
        line = TITLE_LINE.search(front.group(1))
        title = title or (line.group(1).strip("'\"") if line else "")
    body = text.strip()
    if title and body.lower().startswith(title.lower()):
        body = body[len(title):].lstrip(" .:\n")
    return title, body


def pairs_of(coll: str) -> list[tuple[str, str, str]]:
    """(title, title, body) for the collection's titled documents: at most MAX_PAIRS, seeded."""
    out = []
    with open(harness.DATA / coll / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            title, body = title_and_body(json.loads(line))
            if title and len(body.split()) >= MIN_WORDS:
                out.append((title, title, body))
    random.Random(SEED).shuffle(out)
    return out[:MAX_PAIRS]


def adapt(colls: list[str]) -> None:
    for coll in colls:
        pairs = pairs_of(coll)
        print(f"{coll}: {len(pairs)} (title, body) pairs, e.g. {pairs[0][0]!r}", flush=True)
        finetune.fit(pairs, model_for(coll))


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: adapt(argv[1:]) if argv[0] == "adapt"
                else finetune.study(argv[1:], model_for, "adapt", RESULTS))
