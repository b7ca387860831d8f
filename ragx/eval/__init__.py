"""Evaluation: labelled queries (queries.jsonl, BEIR folders) run under several configurations at an
equal candidate budget (runner, budget, presets), the metrics and paired tests (metrics, stats, compare),
and what `ragx eval` writes from them (report, markdown, plots, gate baselines, the train/test gap)."""
