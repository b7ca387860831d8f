"""Scoring, the ground floor: pure numpy over a Candidates object (no SQL, no models, no files). params,
candidates, bm25 (its formulas), fuse (RRF), traverse (heat), score (prepare, shortlist, final score),
explain (the --explain path), files (file ranking). Same inputs -> same floats."""
