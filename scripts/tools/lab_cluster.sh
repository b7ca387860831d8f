#!/usr/bin/env bash
# A lab sweep cluster for real: PostgreSQL (Optuna study + MLflow store), an MLflow tracking server
# and N sweep workers, all on this machine, with private ports and folders (no system service).
#
#   scripts/tools/lab_cluster.sh up                       start PostgreSQL + MLflow server (installs PostgreSQL if missing)
#   scripts/tools/lab_cluster.sh run N [lab overrides]    cache passes once, then N workers on one study; print its audit
#                                                         (JSON on stdout, the verdict on stderr; exit 1 if the audit fails)
#   scripts/tools/lab_cluster.sh kill-worker I            kill -9 worker I where it holds (LAB_HOLD_I=PHASE:SECONDS,
#                                                         PHASE evaluate = mid-batch, tracking = stored, not yet tracked)
#   scripts/tools/lab_cluster.sh drill N T [overrides]    the kill drill: N workers, T trials, worker 1 killed mid-batch and
#                                                         worker 2 between storage and tracking; the audit must pass
#   scripts/tools/lab_cluster.sh status                   what runs, and the URLs (also in $LAB_CLUSTER_DIR/env)
#   scripts/tools/lab_cluster.sh down [--purge]           stop everything (--purge: delete the cluster folder)
#
# Settings (environment): LAB_CLUSTER_DIR (state folder, default /tmp/ragx-lab-cluster), LAB_PG_PORT
# (55432), LAB_MLFLOW_PORT (55500), LAB_PG_LISTEN (127.0.0.1; '*' with LAB_PG_ALLOW=CIDR lets workers
# on other machines in), LAB_MLFLOW_HOST (127.0.0.1; 0.0.0.0 with LAB_MLFLOW_ALLOWED_HOSTS=host:port,...
# for other machines), LAB_PYTHON (the repo's .venv python). Other machines' workers: copy
# $LAB_CLUSTER_DIR/env (URLs with the generated password), mount the pass folder, and run
#   python -m lab sweep [overrides] worker=I passes_from=shared report=false
# Exit 3: PostgreSQL is not installed and cannot be (not root, or no apt-get).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${LAB_CLUSTER_DIR:-/tmp/ragx-lab-cluster}
PG_PORT=${LAB_PG_PORT:-55432}
ML_PORT=${LAB_MLFLOW_PORT:-55500}
PY=${LAB_PYTHON:-$REPO/.venv/bin/python}
PGDATA=$STATE/pg

say() { echo "lab_cluster: $*" >&2; }

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }

ensure_postgres() {
  [ -n "$(pg_bin)" ] && [ -x "$(pg_bin)/initdb" ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "PostgreSQL is not installed and cannot be installed here (needs root and apt-get)"; exit 3
  fi
  say "installing PostgreSQL from the Debian packages"
  # No default cluster: this script runs its own, in $STATE.
  mkdir -p /etc/postgresql-common
  [ -e /etc/postgresql-common/createcluster.conf ] || echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Options::=--force-confold postgresql; } >"$STATE/apt.log" 2>&1; then
    say "PostgreSQL cannot be installed here (apt-get failed: see $STATE/apt.log)"; exit 3
  fi
  [ -x "$(pg_bin)/initdb" ] || { say "PostgreSQL installed but no initdb under /usr/lib/postgresql"; exit 3; }
}

# PostgreSQL refuses to run as root: as root, run its tools as the `postgres` system user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

password() { cat "$STATE/pg.password"; }
pg_url() { echo "postgresql+psycopg://ragx:$(password)@127.0.0.1:$PG_PORT/$1"; }  # psycopg 3 (the [lab] extra)
pg_running() { as_pg "$(pg_bin)/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; }
psql_admin() { PGPASSWORD=$(password) "$(pg_bin)/psql" -h 127.0.0.1 -p "$PG_PORT" -U ragx -d postgres -v ON_ERROR_STOP=1 -qAt "$@"; }

start_postgres() {
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    mkdir -p "$PGDATA"
    [ -s "$STATE/pg.password" ] || "$PY" -c 'import secrets; print(secrets.token_hex(16))' > "$STATE/pg.password"
    chmod 600 "$STATE/pg.password"
    cp "$STATE/pg.password" "$STATE/.pw-initdb"  # initdb reads it as the server's user
    [ "$(id -u)" = 0 ] && { id postgres >/dev/null 2>&1 || as_pg true; chown postgres "$PGDATA" "$STATE/.pw-initdb"; }
    chmod 700 "$PGDATA"
    as_pg "$(pg_bin)/initdb" -D "$PGDATA" -U ragx --pwfile="$STATE/.pw-initdb" -E UTF8 --auth-local=trust --auth-host=scram-sha-256 >"$STATE/initdb.log" 2>&1 \
      || { rm -f "$STATE/.pw-initdb"; cat "$STATE/initdb.log" >&2; exit 1; }
    rm -f "$STATE/.pw-initdb"
    [ -n "${LAB_PG_ALLOW:-}" ] && echo "host all ragx $LAB_PG_ALLOW scram-sha-256" >> "$PGDATA/pg_hba.conf"
  fi
  if ! pg_running; then
    as_pg "$(pg_bin)/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 60 start \
      -o "-c listen_addresses='${LAB_PG_LISTEN:-127.0.0.1}' -p $PG_PORT -c unix_socket_directories='$PGDATA' -c max_connections=200" >/dev/null \
      || { tail -20 "$PGDATA/server.log" >&2; exit 1; }
  fi
  for db in optuna mlflow; do
    [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" = 1 ] || psql_admin -c "CREATE DATABASE $db"
  done
  say "PostgreSQL $(basename "$(dirname "$(pg_bin)")") on 127.0.0.1:$PG_PORT (data $PGDATA)"
}

mlflow_up() { "$PY" -c "import sys, urllib.request; urllib.request.urlopen('http://127.0.0.1:$ML_PORT/health', timeout=2); sys.exit(0)" 2>/dev/null; }

start_mlflow() {
  mkdir -p "$STATE/artifacts"
  if ! mlflow_up; then
    # setsid: the server and its web workers form one process group that `down` stops together
    # MLflow's job runner (GenAI jobs, ~7 consumer processes) is off: the lab does not use it.
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false setsid "$PY" -m mlflow server --backend-store-uri "$(pg_url mlflow)" --artifacts-destination "$STATE/artifacts" \
      --host "${LAB_MLFLOW_HOST:-127.0.0.1}" --port "$ML_PORT" --workers 1 ${LAB_MLFLOW_ALLOWED_HOSTS:+--allowed-hosts "$LAB_MLFLOW_ALLOWED_HOSTS"} \
      >"$STATE/mlflow.log" 2>&1 < /dev/null &
    echo $! > "$STATE/mlflow.pid"
    for _ in $(seq 180); do mlflow_up && break; kill -0 "$(cat "$STATE/mlflow.pid")" 2>/dev/null || break; sleep 1; done
    mlflow_up || { tail -30 "$STATE/mlflow.log" >&2; say "the MLflow server did not come up"; exit 1; }
  fi
  say "MLflow server on http://127.0.0.1:$ML_PORT (store: PostgreSQL db mlflow; artefacts: $STATE/artifacts)"
}

write_env() {
  cat > "$STATE/env" <<EOF
export RAGX_LAB_STORAGE='$(pg_url optuna)'
export MLFLOW_TRACKING_URI='http://127.0.0.1:$ML_PORT'
export RAGX_LAB_PASSES='$STATE/passes'
EOF
  chmod 600 "$STATE/env"
}

cmd_up() {
  mkdir -p "$STATE" && chmod 755 "$STATE"  # the postgres user must reach $STATE/pg
  ensure_postgres
  start_postgres
  start_mlflow
  write_env
  say "ready: . $STATE/env"
}

cmd_run() {
  local n=${1:?usage: run N [lab overrides]}; shift
  [ -s "$STATE/env" ] || { say "not up: run '$0 up' first"; exit 2; }
  . "$STATE/env"
  cd "$REPO"
  say "caching passes (once, into $RAGX_LAB_PASSES) and creating the study"
  "$PY" -m lab cache "$@" >"$STATE/cache.log" 2>&1 || { tail -20 "$STATE/cache.log" >&2; exit 1; }
  local rc=0
  "$PY" -m lab study "$@" >/dev/null 2>&1 || rc=$?  # creates the study; a leftover of an earlier run is judged at the end
  [ $rc -le 1 ] || { "$PY" -m lab study "$@" >/dev/null; exit $rc; }
  local pids=()
  for i in $(seq 0 $((n - 1))); do
    # setsid: each worker is its own session, as on its own machine (the kernel's autogroup scheduler
    # shares CPU between sessions, so workers in one session would split one session's share)
    local hold_var="LAB_HOLD_$i"
    RAGX_LAB_HOLD=${!hold_var:-} setsid "$PY" -m lab sweep "$@" worker="$i" passes_from=shared report=false >"$STATE/worker-$i.log" 2>&1 &
    pids+=($!)
    echo $! > "$STATE/worker-$i.pid"
  done
  say "$n workers started (logs: $STATE/worker-*.log)"
  local bad=0
  for i in "${!pids[@]}"; do
    local rc=0
    wait "${pids[$i]}" || rc=$?
    rm -f "$STATE/worker-$i.pid"
    if [ $rc = 137 ]; then say "worker $i was killed (SIGKILL)"; mark_killed "${pids[$i]}"
    elif [ $rc != 0 ]; then say "worker $i failed (exit $rc):"; tail -5 "$STATE/worker-$i.log" >&2; bad=1
    else say "worker $i: $(grep -m1 '^worker' "$STATE/worker-$i.log" || true)"; fi
  done
  # the audit: repairs what it can (trials stored but never tracked), then its verdict on stderr
  local verdict=0
  "$PY" -m lab study "$@" || verdict=$?
  [ $verdict = 0 ] || return $verdict
  return $bad
}

# A SIGKILLed worker cannot end its MLflow run: mark it KILLED (its logged trials stay).
mark_killed() {
  "$PY" - "$1" <<'EOF' || true
import os, socket, sys
from mlflow.tracking import MlflowClient
client = MlflowClient(os.environ["MLFLOW_TRACKING_URI"])
ids = [e.experiment_id for e in client.search_experiments()]
query = f"tags.pid = '{sys.argv[1]}' and tags.host = '{socket.gethostname()}' and attributes.status = 'RUNNING'"
for r in client.search_runs(ids, filter_string=query):
    client.set_terminated(r.info.run_id, "KILLED")
EOF
}

cmd_kill_worker() {
  local i=${1:?usage: kill-worker I}
  for _ in $(seq 600); do [ -s "$STATE/worker-$i.pid" ] && break; sleep 1; done
  local pid; pid=$(cat "$STATE/worker-$i.pid")
  # Wait until worker I says where it holds (RAGX_LAB_HOLD, lab/batches.py), then kill it there at once.
  for _ in $(seq 6000); do grep -q '^lab: holding at' "$STATE/worker-$i.log" 2>/dev/null && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  local where; where=$(grep -m1 -o 'holding at [a-z]*' "$STATE/worker-$i.log" 2>/dev/null | cut -d' ' -f3)
  [ -n "$where" ] || { say "worker $i never reached its hold (set LAB_HOLD_$i=evaluate:60 or tracking:60 before run)"; return 1; }
  kill -9 "$pid"
  case $where in
    evaluate) say "killed worker $i (pid $pid) with SIGKILL mid-batch: nothing of its batch was stored" ;;
    tracking) say "killed worker $i (pid $pid) with SIGKILL between storage and tracking: its batch is in the study, not in MLflow" ;;
    *) say "killed worker $i (pid $pid) with SIGKILL at $where" ;;
  esac
}

cmd_drill() {
  local n=${1:?usage: drill N TRIALS [lab overrides]} total=${2:?usage: drill N TRIALS [lab overrides]}; shift 2
  [ "$n" -ge 3 ] || { say "the drill kills workers 1 and 2: N must be at least 3"; exit 2; }
  rm -f "$STATE"/worker-*.log
  LAB_HOLD_1=evaluate:600 LAB_HOLD_2=tracking:600 cmd_run "$n" "$@" study_trials="$total" &
  local run=$!
  cmd_kill_worker 1 & local k1=$!
  cmd_kill_worker 2 & local k2=$!
  wait $k1; wait $k2
  local rc=0; wait $run || rc=$?
  say "drill: the audit exited $rc"
  return $rc
}

cmd_status() {
  if [ -n "$(pg_bin)" ] && [ -d "$PGDATA" ] && pg_running; then say "PostgreSQL: running on 127.0.0.1:$PG_PORT"; else say "PostgreSQL: stopped"; fi
  if mlflow_up; then say "MLflow server: running on http://127.0.0.1:$ML_PORT"; else say "MLflow server: stopped"; fi
  for f in "$STATE"/worker-*.pid; do [ -e "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && say "$(basename "$f" .pid): running"; done
  [ -s "$STATE/env" ] && say "environment for workers: $STATE/env"
  return 0
}

cmd_down() {
  for f in "$STATE"/worker-*.pid; do [ -e "$f" ] && { kill "$(cat "$f")" 2>/dev/null || true; rm -f "$f"; }; done
  if [ -s "$STATE/mlflow.pid" ]; then
    local group; group=$(cat "$STATE/mlflow.pid")
    kill -- "-$group" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 -- "-$group" 2>/dev/null || break; sleep 1; done  # until the port is free
    kill -9 -- "-$group" 2>/dev/null || true
    rm -f "$STATE/mlflow.pid"
  fi
  if [ -n "$(pg_bin)" ] && [ -d "$PGDATA" ] && pg_running; then as_pg "$(pg_bin)/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null; fi
  say "stopped"
  if [ "${1:-}" = --purge ]; then rm -rf "$STATE"; say "removed $STATE"; fi
}

case "${1:-}" in
  up) cmd_up ;;
  run) shift; cmd_run "$@" ;;
  kill-worker) shift; cmd_kill_worker "$@" ;;
  drill) shift; [ -s "$STATE/env" ] || { say "not up: run '$0 up' first"; exit 2; }; . "$STATE/env"; cmd_drill "$@" ;;
  status) cmd_status ;;
  down) shift; cmd_down "$@" ;;
  *) sed -n '2,22p' "$0" >&2; exit 2 ;;
esac
