#!/usr/bin/env bash
# Start or stop the real BitRouter daemon of one group of a live lineage (or
# the preflight daemon the sentinels go through), as tools/live/manifest.py
# froze it in RUN_DIR/live.json: its config, port, database, and its trace and
# decision paths (BITROUTER_WORKFLOW_TRACE_JSONL / BITROUTER_POLICY_DECISION_JSONL
# = the manifest's trace_path / decision_path); stdout+stderr to its daemon_log.
#
#   bash tools/live/daemon.sh start|stop|status RUN_DIR GROUP|preflight
#
# start waits (bounded, BENCHLEDGER_LIVE_START_TIMEOUT, default 60 s) for
# /health and prints the daemon URL; it refuses when the config's SHA-256 is
# not the frozen one, or when another daemon holds the port. stop signals only
# the recorded pid, and only if it is this group's `bro serve -c CONFIG`.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TIMEOUT="${BENCHLEDGER_LIVE_START_TIMEOUT:-60}"
log() { echo "live/daemon: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
[[ $# -eq 3 ]] || { log "usage: $0 start|stop|status RUN_DIR GROUP|preflight"; exit 2; }
action="$1" run="$(cd "$2" && pwd)" group="$3"
[[ -f "$run/live.json" ]] || die "no $run/live.json (tools/live/manifest.py writes it)"
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); g=sys.argv[2]
x=d["preflight"] if g=="preflight" else d["groups"][g]
print(d[sys.argv[3]] if sys.argv[3] in ("bro","bro_sha256") else x.get(sys.argv[3], ""))' "$run/live.json" "$group" "$1"; }
bro="$(field bro)"; config="$(field config)"; port="$(field port)"; dir="$(field dir)"
if [[ "$group" == preflight ]]; then
  traces="$dir/traces.jsonl"; decisions="$dir/decisions.jsonl"; daemon_log="$dir/daemon.log"; want_sha=""
else
  traces="$(field trace_path)"; decisions="$(field decision_path)"; daemon_log="$(field daemon_log)"; want_sha="$(field config_sha256)"
fi
pidfile="$dir/daemon.pid"
url="http://127.0.0.1:$port"
healthy() { python3 -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2).read()' "$url/health" >/dev/null 2>&1; }
ours() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null && tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -qF " serve -c $config"; }

case "$action" in
  status)
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    if ours "$pid" && healthy; then echo "$url"; else exit 1; fi ;;
  start)
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    if ours "$pid" && healthy; then log "$group already up (pid $pid)"; echo "$url"; exit 0; fi
    [[ -x "$bro" ]] || die "no bro binary at $bro"
    [[ "$(sha256sum "$bro" | cut -d' ' -f1)" == "$(field bro_sha256)" ]] || die "$bro is not the frozen binary"
    if [[ -n "$want_sha" ]]; then
      [[ "$(sha256sum "$config" | cut -d' ' -f1)" == "$want_sha" ]] || die "$config is not the frozen config of $group"
    fi
    healthy && die "something already answers on $url"
    mkdir -p "$(dirname "$traces")" "$(dirname "$daemon_log")"
    (
      cd "$dir"
      export BITROUTER_HOME="$dir" HOME="$dir" BITROUTER_NO_UPDATE_CHECK=1
      export BITROUTER_WORKFLOW_TRACE_JSONL="$traces" BITROUTER_POLICY_DECISION_JSONL="$decisions"
      export RUST_LOG="${RUST_LOG:-info}"
      unset BITROUTER_WORKFLOW_TRACE_HARNESS
      exec setsid "$bro" serve -c "$config" </dev/null >>"$daemon_log" 2>&1
    ) &
    pid=$!
    echo "$pid" > "$pidfile"
    deadline=$((SECONDS + TIMEOUT))
    until healthy; do
      kill -0 "$pid" 2>/dev/null || { tail -n 20 "$daemon_log" >&2; die "$group's daemon exited during startup"; }
      (( SECONDS < deadline )) || { kill "$pid" 2>/dev/null; tail -n 20 "$daemon_log" >&2; die "$group's daemon did not answer within ${TIMEOUT}s"; }
      sleep 0.2
    done
    log "$group: bro pid $pid on $url"
    echo "$url" ;;
  stop)
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    if ! ours "$pid"; then log "$group: no daemon of ours running"; rm -f "$pidfile"; exit 0; fi
    kill -TERM "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && { log "$group: SIGKILL after SIGTERM"; kill -KILL "$pid" 2>/dev/null || true; }
    rm -f "$pidfile"
    log "$group: stopped (pid $pid)" ;;
  *) log "unknown action $action"; exit 2 ;;
esac
