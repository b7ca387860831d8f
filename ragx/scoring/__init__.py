"""Scoring, the ground floor: pure numpy over a Candidates object (no SQL, no models, no files).

params (Params, PassCaps and `covers`), candidates (the pass's arrays and the columns a cache keeps),
fuse (RRF), traverse (heat propagation), score (prepare once, then shortlist and final score),
explain (the --explain path), files (file ranking and runs). Same inputs -> same floats.
"""
