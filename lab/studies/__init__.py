"""Offline ranking studies re-scored from cached retrieval passes at an equal candidate budget: harness
(the shared loading, caches, metrics and train/test protocol research/ imports), signals, families,
fusion, lexical and graph studies, learning to rank, stats and tables."""
