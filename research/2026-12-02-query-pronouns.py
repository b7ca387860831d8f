"""Pronouns in the BM25 leg's query (issue 13): "my", "your", "his" are function words too.

The BM25 leg drops 60 function words from a query (`ragx.search.lexical.STOPWORDS`: articles,
prepositions, auxiliaries, wh-words), not the personal pronouns. A user's question to a notes vault
says "how do I move my notes"; Dendron's documentation says "your", while its testimonials, meeting
transcripts and community notes say "I" and "my", so "my" is a rare, heavily weighted term there and
pulls first-person prose up (found by hand: `dendron.testimonials.ryan.md` fifth for "publish my vault
as a website"). MuSiQue's questions say "his" and "her"; SciFact's claims rarely use pronouns.

The variant adds the personal, possessive and reflexive pronouns of English (list below, fixed before
running, one closed word class) to the query's function words, everywhere a query's BM25 words are read
(the leg, the anchor documents' BM25). A query made only of function words keeps them all, as today.
The pass is run again with the variant's words (dense 100 + BM25 100 seeds, graph off) and scored with
the shipped defaults: the same caps, so the same budget. Chosen on TRAIN (dendron-vault train, SciFact
train) by the mean gain, only if positive; then the four test splits once.

    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-query-pronouns.py study dendron-vault-train scifact-train
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-query-pronouns.py study <four test specs>   # once, after choosing
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-query-pronouns.py compare pronouns <specs>
    PYTHONPATH=. RAGX_CACHE_DIR=... python research/2026-12-02-query-pronouns.py pooled pronouns <four test specs>

Variant passes are cached in $RAGX_CACHE_DIR/research-prf/<spec>-pronouns; per-query results go to
$RAGX_CACHE_DIR/research-prf/query-pronouns-results.json.
"""

from __future__ import annotations

import sys
from unittest import mock

from lab.studies import harness
from lab.studies.harness import run_command, studied
from ragx.search import lexical

RESULTS = harness.OUT / "query-pronouns-results.json"
PRONOUNS = frozenset(
    """i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her
    hers herself it its itself they them their theirs themselves""".split()
)


def study(specs: list[str]) -> None:
    from lab.builds import prepare

    for spec, loaded, base, per_variant in studied(specs, RESULTS):
        coll, _corpus, _passes, meta, _qv, p = loaded
        corpus, queries = prepare({"data_dir": str(harness.DATA / coll), "cache": None}, spec.rsplit("-", 1)[1])
        mentioned = sum(any(w in PRONOUNS for w in lexical._WORD.findall(q.text.lower())) for q in queries)
        with mock.patch.object(lexical, "STOPWORDS", lexical.STOPWORDS | PRONOUNS):
            passes, _meta = harness.cached_passes(corpus, queries, harness.OUT / f"{spec}-pronouns")
        mean, per_variant["pronouns"] = harness.ndcg(passes, p, meta)
        print(f"{spec} pronouns {mean:.4f} ({mean - base:+.4f}); {mentioned} of {len(queries)} queries hold a pronoun", flush=True)


if __name__ == "__main__":
    run_command(sys.argv[1:], RESULTS, lambda argv: study(argv[1:]))
