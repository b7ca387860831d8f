#!/usr/bin/env bash
# Builds the light install (scripts/install/install_light) in a fresh folder and shows index, query, eval and
# mcp working in it with the embedded model, from a fresh model cache (the ONNX graph is built from the
# bundled weights without torch); prints the venv's size before and after that first use.
#   bash scripts/check/check_light.sh DATA_DIR [WORK_DIR]
# DATA_DIR: a small BEIR collection (e.g. shared/data/cranfield); WORK_DIR (default: a new temporary
# folder) receives venv/, cache/ (RAGX_CACHE_DIR), beir/ (the materialised, indexed corpus) and logs.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=$(realpath "${1:?usage: check_light.sh DATA_DIR [WORK_DIR]}")
WORK=${2:-$(mktemp -d /tmp/ragx-light.XXXXXX)}
mkdir -p "$WORK"
WORK=$(realpath "$WORK")
VENV=$WORK/venv
export RAGX_CACHE_DIR=$WORK/cache RAGX_RC=$WORK/rc
mb() { du -sm "$1" | cut -f1; }
step() { printf '\n== %s\n' "$*"; }

step "install (scripts/install/install_light $VENV)"
START=$SECONDS
bash scripts/install/install_light "$VENV"
echo "install took $((SECONDS - START)) s; venv $(mb "$VENV") MB before first use"
for heavy in torch sentence_transformers transformers; do
    if "$VENV/bin/python" -c "import $heavy" 2>/dev/null; then echo "FAIL: $heavy is importable" >&2; exit 1; fi
done

step "eval: materialise and index $(basename "$DATA") (ragx index), then every preset with significance tests"
"$VENV/bin/ragx" eval beir "$DATA" --split test --cache "$WORK/beir" --json >"$WORK/eval.json" 2>"$WORK/eval.log" || {
    tail -5 "$WORK/eval.log" >&2; exit 1; }
"$VENV/bin/python" - "$WORK/eval.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ds = doc["datasets"][0]
cmp = ds["comparisons"]
print(f"  {ds['n_queries']} queries, {ds['n_files']} files, {ds['n_chunks']} chunks; {cmp['method']}")
for name, by_metric in doc["summary"]["nDCG@10"].items():
    line = f"  {name:<12} nDCG@10 {by_metric['mean']:.4f}"
    c = cmp["configs"].get(name, {}).get("nDCG@10")
    if c:
        line += f"  vs {cmp['reference']}: {c['diff']:+.4f}, p {c['p']:.4f} (BH {c['p_adjusted']:.4f})"
    print(line)
PY
ROOT=$WORK/beir/corpus

step "index: an incremental run after editing one file"
FILE=$(find "$ROOT" -maxdepth 1 -type f -name '*.md' -print -quit)
echo "an added line" >>"$FILE"
"$VENV/bin/ragx" index --root "$ROOT" --json | "$VENV/bin/python" -c \
    "import json,sys; r=json.load(sys.stdin); print('  changed', r['changed'], 'chunks embedded', r['embedded_chunks'])"

step "status and query (one-shot)"
"$VENV/bin/ragx" status --json --root "$ROOT" | "$VENV/bin/python" -c \
    "import json,sys; s=json.load(sys.stdin); print('  files', s['files'], 'chunks', s['chunks'], 'consistent', s['consistent'], 'drift', s['drift'])"
"$VENV/bin/ragx" query "boundary layer flow over a flat plate" --json --root "$ROOT" | "$VENV/bin/python" -c \
    "import json,sys; d=json.load(sys.stdin); print('  top results', [r['file'] for r in d['results'][:3]])"

step "mcp: the SDK's stdio client against ragx mcp (handshake, status, searches)"
"$VENV/bin/python" scripts/bench/bench_mcp.py --root "$ROOT" --queries "$WORK/beir/queries/test.jsonl" --n 5

step "size"
echo "venv $(mb "$VENV") MB after first use (du -sm $VENV)"
# scikit-learn (community labels) is on its way out of the core dependencies: its share, file by file.
"$VENV/bin/python" - <<'PY'
from importlib import metadata
only_sklearn = ["scikit-learn", "joblib", "threadpoolctl", "narwhals"]  # nothing else here requires the last three
tops = set()
for name in only_sklearn:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        continue
    tops |= {dist.locate_file(f.parts[0]) for f in dist.files or []}  # packages, .libs, dist-info
files = {p for top in tops for p in ([top] if top.is_file() else top.rglob("*")) if p.is_file()}  # with the .pyc written since
total = sum(p.stat().st_size for p in files)
print(f"of which scikit-learn and the packages only it pulls in: {total / 2**20:.0f} MB")
PY
