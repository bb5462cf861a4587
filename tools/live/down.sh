#!/usr/bin/env bash
# Stop the live loopback stack started by tools/live/up.sh: bro, the stand-in
# provider, and the live moto server, in that order. Only the pids recorded in
# tools/.run/live/live.run are signalled, and only when their command line is
# the expected program (a recycled pid is left alone). SIGTERM, then SIGKILL
# after ~10 s. Removes the run file; keeps the run directory (evidence).
# Exit 0 when nothing is running.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
LIVE_RUN="${BENCHLEDGER_LIVE_RUN_DIR:-$REPO/tools/.run/live}"
RUN_FILE="$LIVE_RUN/live.run"

log() { echo "live/down: $*" >&2; }

# A lineage's stack (tools/live/up.sh --lineage RUN_DIR): every group daemon,
# the preflight daemon, the provider, moto.
if [[ "${1:-}" == "--lineage" ]]; then
  run="$(cd "${2:?--lineage needs the run directory}" && pwd)"
  for g in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["groups"]))' "$run/live.json") preflight; do
    bash "$HERE/daemon.sh" stop "$run" "$g" || true
  done
  pid="$(sed -n 's/^provider_pid=//p' "$run/stack.run" 2>/dev/null || true)"
  if [[ -n "$pid" ]] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "tools/live/provider.py"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    log "stopped provider (pid $pid)"
  fi
  rm -f "$run/stack.run"
  [[ -f "$run/moto/moto.run" ]] && BENCHLEDGER_RUN_DIR="$run/moto" bash "$REPO/tools/moto/stop.sh" || true
  exit 0
fi

if [[ ! -f "$RUN_FILE" ]]; then
  log "no run file ($RUN_FILE); nothing to stop"
  # A live moto may still be recorded on its own.
  [[ -f "$LIVE_RUN/moto.run" ]] && BENCHLEDGER_RUN_DIR="$LIVE_RUN" bash "$REPO/tools/moto/stop.sh" || true
  exit 0
fi
get() { sed -n "s/^$1=//p" "$RUN_FILE" | head -n 1; }

stop_pid() { # name pid pattern
  local name="$1" pid="$2" pattern="$3"
  if [[ -z "$pid" ]]; then return 0; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    log "$name (pid $pid) was not running"
    return 0
  fi
  if ! tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$pattern"; then
    log "pid $pid is not $name ($pattern); not signalling it"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  log "stopped $name (pid $pid)"
}

stop_pid bro "$(get bro_pid)" " serve -c "
stop_pid provider "$(get provider_pid)" "tools/live/provider.py"
if [[ -f "$LIVE_RUN/moto.run" ]]; then
  BENCHLEDGER_RUN_DIR="$LIVE_RUN" bash "$REPO/tools/moto/stop.sh" || true
fi
log "run directory kept: $(get run_dir)"
rm -f "$RUN_FILE"
