#!/usr/bin/env bash
# The rerank-score cache at work: `python -m lab sweep sweep=rerank` (rerank_weight and shortlist swept
# with the signal weights) run twice with the same seed (the same trials), then once with another seed,
# on a BEIR folder's train split, with a tiny random cross-encoder built locally (tests/cross_encoders.py;
# its scores are meaningless: this shows the counts, not a ranking gain). Each run prints
# "cross-encoder pairs computed: N, read from the score cache: M".
#
#   scripts/tools/rerank_sweep_demo.sh [DATA_DIR] [TRIALS] [WORK]
#   e.g. scripts/tools/rerank_sweep_demo.sh /work/shared/data/dendron-vault 30 /tmp/rerank-demo
# Uses $RAGX_CACHE_DIR for the collection's index (as `ragx eval beir` does); everything else in WORK.
set -euo pipefail
DATA=$(realpath "${1:-${RAGX_DATA:-../shared/data}/dendron-vault}")
TRIALS=${2:-30}
WORK=$(realpath -m "${3:-/tmp/rerank-demo}")
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
mkdir -p "$WORK"
[ -f "$WORK/ce/config.json" ] || "$PY" -c "import sys; sys.path.insert(0, 'tests'); from pathlib import Path; from cross_encoders import build_tiny_cross_encoder; build_tiny_cross_encoder(Path('$WORK/ce'))"
printf '[rerank]\nmodel = "%s"\nmax_length = 128\n' "$WORK/ce" > "$WORK/ragxrc"
export RAGX_RC="$WORK/ragxrc" HF_HUB_OFFLINE=1
common=(sweep=rerank "dataset.name=$(basename "$DATA")" "dataset.data_dir=$DATA" split=train "cache_root=$WORK/lab"
        "mlflow.tracking_uri=sqlite:///$WORK/mlflow.db" "mlflow.artifacts=$WORK/artifacts" "trials=$TRIALS" report=false)
for run in "first optuna.seed=0" "again optuna.seed=0" "other-seed optuna.seed=1"; do
  set -- $run
  echo "== $1 ($2, $TRIALS trials)"
  "$PY" -m lab sweep "${common[@]}" "optuna.study_name=rerank-demo-$1-$(date +%s)" "$2" | grep -E "^(lab:|worker|best|cross-encoder)"
done
echo "score file: $(du -h "$WORK/lab/passes/rerank-scores.sqlite" | cut -f1) $WORK/lab/passes/rerank-scores.sqlite"
