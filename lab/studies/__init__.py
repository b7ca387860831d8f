"""Offline ranking studies (issue 13): graph families, query-adaptive fusion, multi-collection tuning
and the lexical-leg comparison, all re-scored from cached retrieval passes at equal candidate budget."""
