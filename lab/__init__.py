"""The research harness: cached retrieval passes, offline re-scoring, Optuna sweeps tracked in MLflow,
and promotion of winners into ragx/defaults.toml. Repo only; imports ragx, never the reverse."""
