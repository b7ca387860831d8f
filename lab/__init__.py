"""The research lab (repo only; imports ragx, never the reverse): cached retrieval passes, offline
re-scoring, Optuna sweeps tracked in MLflow, promotion of winners into ragx/defaults.toml, and
studies/, the harness research/ imports."""
