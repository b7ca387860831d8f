#!/usr/bin/env bash
# The read-only case as a user meets it (issue 42): index a small corpus, let the process end, then
#   1. as a non-root user (nobody): chmod -R a-w .ragx, then query, status and an MCP search;
#   2. as root: a read-only bind mount over .ragx, then the same three.
# Each command's exit code is printed; every one must be 0. Needs root (to become nobody and to mount).
#
#   sudo bash scripts/check/read_only_demo.sh [RAGX] [NOTES_DIR]
# RAGX: the ragx executable (default: .venv/bin/ragx); NOTES_DIR: a folder of *.md notes (default: the
# repository's docs/). PYTHONPATH, if set, is passed on (a worktree's code run by a shared venv).
# NOBODY_RAGX: the ragx the non-root user runs (default RAGX), for a venv whose interpreter that user
# cannot reach (e.g. a pyenv python under /root): a launcher using the system python3.11 and the
# venv's site-packages does.
set -u
RAGX=${1:-$(pwd)/.venv/bin/ragx}
NOBODY_RAGX=${NOBODY_RAGX:-$RAGX}
NOTES=${2:-$(pwd)/docs}
WORK=$(mktemp -d /tmp/ragx-read-only-XXXXXX)
chmod 755 "$WORK"
# nobody's own model cache: a copy of the exported ONNX model when RAGX_CACHE_DIR holds one (no export)
mkdir -p "$WORK/cache" && cp -r "${RAGX_CACHE_DIR:-/nonexistent}"/{onnx,fingerprints} "$WORK/cache/" 2>/dev/null
chown -R nobody "$WORK/cache"
AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups env "HOME=$WORK/home" "PYTHONPATH=${PYTHONPATH:-}" RAGX_RC=/nonexistent
           "RAGX_CACHE_DIR=$WORK/cache")
MCP_IN='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"how do I search my notes"}}}'

show() {  # label, command...: run it, print its exit code and its last line
    local label=$1; shift
    local out; out=$("$@" 2>&1); local code=$?
    printf '%-52s exit %s  %s\n' "$label" "$code" "$(printf '%s' "$out" | tail -n 1 | cut -c1-110)"
}

mcp_search() {  # exit 0 when the search call answered results, not an error
    local reply; reply=$(printf '%s\n' "$MCP_IN" | "$@" 2>/dev/null | grep '"id":2')
    printf '%s' "$reply" | grep -q '"isError":true' && return 2
    printf '%s' "$reply" | grep -q 'results' || return 2
}

for side in user mount; do
    C=$WORK/$side
    mkdir -p "$C" "$WORK/home" && cp "$NOTES"/*.md "$C"/ && chown -R nobody "$C" "$WORK/home"
    echo "== $side: $C ($(ls "$C" | wc -l) notes)"
    if [ "$side" = user ]; then
        show "nobody: ragx index" "${AS_NOBODY[@]}" "$NOBODY_RAGX" index --root "$C"
        show "nobody: chmod -R a-w .ragx" "${AS_NOBODY[@]}" chmod -R a-w "$C/.ragx"
        echo "   files beside index.sqlite: $(ls "$C/.ragx" | grep 'index.sqlite-' | tr '\n' ' ' || true)"
        show "nobody: ragx query" "${AS_NOBODY[@]}" "$NOBODY_RAGX" query "how do I search my notes" --root "$C"
        show "nobody: ragx status" "${AS_NOBODY[@]}" "$NOBODY_RAGX" status --root "$C"
        show "nobody: ragx mcp, tools/call search" mcp_search "${AS_NOBODY[@]}" "$NOBODY_RAGX" mcp --root "$C"
        show "nobody: ragx index (must refuse: exit 2)" "${AS_NOBODY[@]}" "$NOBODY_RAGX" index --root "$C"
    else
        show "root: ragx index" env RAGX_RC=/nonexistent "$RAGX" index --root "$C"
        mount --bind "$C/.ragx" "$C/.ragx" && mount -o remount,bind,ro "$C/.ragx"
        show "root: touch .ragx/x on the ro mount (must fail)" touch "$C/.ragx/x"
        show "root: ragx query" env RAGX_RC=/nonexistent "$RAGX" query "how do I search my notes" --root "$C"
        show "root: ragx status" env RAGX_RC=/nonexistent "$RAGX" status --root "$C"
        show "root: ragx mcp, tools/call search" mcp_search env RAGX_RC=/nonexistent "$RAGX" mcp --root "$C"
        umount "$C/.ragx"
    fi
done
chmod -R u+w "$WORK" && rm -rf "$WORK"
