#!/usr/bin/env bash
# kill -9 an index run at several moments; after each, the index must read as before (or as "not
# indexed" if no run ever finished), and the next `ragx index` must finish with a consistent index.
#   scripts/check/crash_test.sh CORPUS_DIR "DELAYS..."      e.g. scripts/check/crash_test.sh /tmp/cran "3 15 40"
set -uo pipefail
root=$1
delays=${2:-"2 10 30"}
ragx=${RAGX:-ragx}
status() { $ragx status --root "$root" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("indexed" if d["indexed"] else "not-indexed", d.get("chunks"), "consistent" if d.get("consistent", True) else "INCONSISTENT " + "; ".join(d["problems"]))'; }
fail=0
for d in $delays; do
  $ragx index --root "$root" --full >/dev/null 2>&1 &
  pid=$!
  sleep "$d"
  if kill -0 $pid 2>/dev/null; then kill -9 $pid; wait $pid 2>/dev/null; what="killed after ${d}s"; else wait $pid; what="finished before ${d}s"; fi
  after=$(status)
  $ragx index --root "$root" >/dev/null 2>/tmp/crash_test.err; rc=$?
  final=$(status)
  echo "$what: status right after: $after | next index: exit $rc | status then: $final"
  case "$after $final" in *INCONSISTENT*) fail=1;; esac
  [ $rc -eq 0 ] || { fail=1; cat /tmp/crash_test.err; }
done
exit $fail
