#!/usr/bin/env bash
# Build the sdist and wheel, install the wheel as a tool with pipx into a fresh environment (its own
# virtualenv, its own cache, nothing shared with .venv), index a small corpus written here and answer a
# query with it. Exit 0 only when the installed `ragx` finds the right file.
#
#   bash scripts/check/check_wheel.sh            # uses .venv/bin/python for the build (needs `build`: the dev extra)
#   KEEP=1 bash scripts/check/check_wheel.sh     # keep the work folder (printed) for a look afterwards
#
# torch: the embedded model's package depends on sentence-transformers and so on torch; like
# scripts/install/bootstrap, the CPU build is installed first (pipx --preinstall) so pip never reaches for a
# CUDA build. RAGX_TORCH_VERSION overrides the pin.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
export PIP_DISABLE_PIP_VERSION_CHECK=1
work=$(mktemp -d "${TMPDIR:-/tmp}/ragx-wheel.XXXXXX")
[ -n "${KEEP:-}" ] && echo "work folder: $work" || trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
step() { echo "[$(( $(date +%s) - t0 ))s] $*"; }

step "building sdist and wheel"
"$PY" -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
wheel=$(ls "$work"/dist/ragx-*.whl)
sdist=$(ls "$work"/dist/ragx-*.tar.gz)
want_version=$(basename "$wheel" | cut -d- -f2)
step "built $(basename "$sdist") and $(basename "$wheel")"
# The wheel must carry the package data the CLI reads at run time.
"$PY" - "$wheel" <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
missing = [n for n in ("ragx/defaults.toml", "ragx/agent/SKILL.md", "ragx/cli/main.py") if n not in names]
if missing:
    sys.exit(f"wheel lacks {missing}")
if any(n.startswith(("tests/", "lab/")) for n in names):
    sys.exit("wheel carries tests/ or lab/")
PY

if command -v pipx >/dev/null 2>&1; then
    PIPX=pipx
else
    step "no pipx on PATH: installing pipx into a throwaway virtualenv"
    python3 -m venv "$work/pipx-venv"
    "$work/pipx-venv/bin/pip" install -q pipx
    PIPX="$work/pipx-venv/bin/pipx"
fi
export PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/bin" PIPX_MAN_DIR="$work/man"
step "pipx install $(basename "$wheel") (torch ${RAGX_TORCH_VERSION:-2.13.0} CPU first)"
"$PIPX" install --preinstall "torch==${RAGX_TORCH_VERSION:-2.13.0}" "${wheel}[model]" >"$work/pipx.log" 2>&1 \
    || { tail -20 "$work/pipx.log"; exit 1; }
RAGX="$work/bin/ragx"

# A fresh cache: the first index run exports the bundled model to ONNX inside the tool's own env.
export RAGX_CACHE_DIR="$work/cache"
corpus="$work/corpus"
mkdir -p "$corpus/notes"
cat >"$corpus/notes/sourdough.md" <<'MD'
# Sourdough
Feed the starter with equal weights of flour and water the evening before. Bake the loaf in a
preheated Dutch oven at 250 degrees for twenty minutes with the lid on, then uncover it.
MD
cat >"$corpus/notes/bicycle.md" <<'MD'
# Fixing a flat tyre
Lever the tyre off the rim, find the puncture by pumping air into the inner tube under water, patch
it, and check the inside of the tyre for the thorn before refitting.
MD
cat >"$corpus/notes/tides.md" <<'MD'
# Tides
The moon's gravity raises two bulges of water on opposite sides of the earth; spring tides come when
sun and moon line up at new and full moon.
MD

version=$("$RAGX" --version)
step "installed: $version"
case "$version" in *"$want_version"*) ;; *) echo "ragx --version says '$version', the wheel is $want_version"; exit 1 ;; esac
step "ragx index"
"$RAGX" index --root "$corpus"
step "ragx query"
"$RAGX" query "how do I repair a puncture in my bike wheel" --root "$corpus" --json --top 3 >"$work/query.json"
python3 - "$work/query.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == "ragx.query.v1", doc["schema"]
top = doc["results"][0]
print(f"top result: {top['file']}:{top['line_start']}-{top['line_end']} score {top['score']:.3f}")
if top["file"] != "notes/bicycle.md":
    sys.exit(f"expected notes/bicycle.md first, got {top['file']}")
PY
step "ok: the wheel installed with pipx answers a query"
