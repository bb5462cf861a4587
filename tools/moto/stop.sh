#!/usr/bin/env bash
# Stop the moto server started by tools/moto/start.sh and remove its run-file.
# Only the pid recorded in the run-file is signalled, and only if it is our server.py.
# Succeeds (exit 0) when nothing is running.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN_DIR="${BENCHLEDGER_RUN_DIR:-$(cd "$HERE/.." && pwd)/.run}"
RUN_FILE="$RUN_DIR/moto.run"

log() { echo "moto/stop: $*" >&2; }

if [[ ! -f "$RUN_FILE" ]]; then
  log "no run-file ($RUN_FILE); nothing to stop"
  exit 0
fi

pid="$(sed -n 's/^pid=//p' "$RUN_FILE")"
if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
  # Guard against a recycled pid: the process must be tools/moto/server.py.
  if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "moto/server.py"; then
    kill -TERM "$pid"
    for _ in $(seq 1 50); do            # up to ~10 s for a clean shutdown
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid did not exit after SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped moto server (pid $pid)"
  else
    log "pid $pid is not a moto server.py process; not signalling it"
  fi
else
  log "moto server (pid ${pid:-?}) was not running"
fi
rm -f "$RUN_FILE"
