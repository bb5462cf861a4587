#!/usr/bin/env bash
# Start the moto server (tools/moto/server.py) in the background on 127.0.0.1.
#
#   eval "$(bash tools/moto/start.sh [--port P] [--quota-vcpu N])"
#
# Without --port an OS-chosen free port is used. Waits (bounded) until the server
# answers, writes pid and port to the run-file tools/.run/moto.run (override the
# folder with BENCHLEDGER_RUN_DIR) and prints on stdout only:
#   export BENCHLEDGER_AWS_ENDPOINT_URL=http://127.0.0.1:PORT
# If a server from a previous start is still alive and answering, it is reused
# (an explicit --quota-vcpu is then applied to it through its control endpoint).
# MOTO_ACCOUNT_ID in the environment sets the account moto reports.
# BENCHLEDGER_MOTO_START_TIMEOUT bounds the wait (seconds, default 30).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN_DIR="${BENCHLEDGER_RUN_DIR:-$(cd "$HERE/.." && pwd)/.run}"
RUN_FILE="$RUN_DIR/moto.run"
LOG_FILE="$RUN_DIR/moto.log"
TIMEOUT="${BENCHLEDGER_MOTO_START_TIMEOUT:-30}"

log() { echo "moto/start: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

port=0
quota=64
quota_given=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --port) port="${2:?--port needs a value}"; shift 2 ;;
    --quota-vcpu) quota="${2:?--quota-vcpu needs a value}"; quota_given=1; shift 2 ;;
    *) log "usage: $0 [--port P] [--quota-vcpu N]"; exit 2 ;;
  esac
done
[[ "$port" =~ ^[0-9]+$ ]] || die "--port must be a number: $port"

# Venv (fast when it is already up to date); its python is setup.sh's last stdout line.
PY="$(bash "$HERE/setup.sh" | tail -n 1)"
mkdir -p "$RUN_DIR"

# True if the URL answers our health endpoint.
answers() {
  "$PY" - "$1" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/_benchledger/health", timeout=2).read()
EOF
}

# Reuse a live server from an earlier start.
if [[ -f "$RUN_FILE" ]]; then
  old_pid="$(sed -n 's/^pid=//p' "$RUN_FILE")"
  old_port="$(sed -n 's/^port=//p' "$RUN_FILE")"
  if [[ -n "$old_pid" ]] && kill -0 "$old_pid" 2>/dev/null && answers "http://127.0.0.1:$old_port"; then
    if [[ "$port" != 0 && "$port" != "$old_port" ]]; then
      die "a moto server is already running on port $old_port (pid $old_pid); run tools/moto/stop.sh first"
    fi
    log "reusing running moto server (pid $old_pid, port $old_port)"
    if [[ $quota_given -eq 1 ]]; then
      "$PY" - "http://127.0.0.1:$old_port" "$quota" <<'EOF' >/dev/null || die "could not set the vCPU quota"
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1] + "/_benchledger/quotas/ec2/L-1216C47A",
                             data=json.dumps({"value": float(sys.argv[2])}).encode(), method="PUT")
urllib.request.urlopen(req, timeout=5).read()
EOF
      log "set vCPU quota to $quota"
    fi
    echo "export BENCHLEDGER_AWS_ENDPOINT_URL=http://127.0.0.1:$old_port"
    exit 0
  fi
  log "removing stale run-file $RUN_FILE"
  rm -f "$RUN_FILE"
fi

port_file="$RUN_DIR/moto.port"
rm -f "$port_file"
# setsid: own session, so the server survives the caller's shell and gets no SIGHUP.
setsid "$PY" "$HERE/server.py" --port "$port" --quota-vcpu "$quota" --port-file "$port_file" \
  </dev/null >"$LOG_FILE" 2>&1 &
pid=$!

# Bounded wait: the port file appears once bound, then the health endpoint must answer.
deadline=$((SECONDS + TIMEOUT))
url=""
while :; do
  if ! kill -0 "$pid" 2>/dev/null; then
    tail -n 20 "$LOG_FILE" >&2 || true
    die "moto server exited during startup (log: $LOG_FILE)"
  fi
  if [[ -z "$url" && -s "$port_file" ]]; then
    url="http://127.0.0.1:$(tr -d '[:space:]' < "$port_file")"
  fi
  if [[ -n "$url" ]] && answers "$url"; then
    break
  fi
  if (( SECONDS >= deadline )); then
    kill "$pid" 2>/dev/null || true
    tail -n 20 "$LOG_FILE" >&2 || true
    die "moto server did not answer within ${TIMEOUT}s (log: $LOG_FILE)"
  fi
  sleep 0.2
done

bound_port="${url##*:}"
# Write the run-file atomically: readers never see a half-written one.
printf 'pid=%s\nport=%s\nurl=%s\nlog=%s\n' "$pid" "$bound_port" "$url" "$LOG_FILE" > "$RUN_FILE.tmp"
mv "$RUN_FILE.tmp" "$RUN_FILE"
rm -f "$port_file"
log "moto server pid $pid on $url (vCPU quota $quota, account ${MOTO_ACCOUNT_ID:-123456789012})"
echo "export BENCHLEDGER_AWS_ENDPOINT_URL=$url"
