#!/usr/bin/env bash
# Bring up the live loopback stack: moto (AWS), the stand-in provider +
# settlement API (tools/live/provider.py) and the real BitRouter daemon
# (`bro serve`), each on a free 127.0.0.1 port.
#
#   eval "$(bash tools/live/up.sh [--run-dir DIR] [--script FILE] [--policy-lock FILE])"
#   eval "$(bash tools/live/up.sh --lineage RUN_DIR [--script FILE])"   # a lineage's stack
#
# Idempotent: when the run file names live, answering processes it prints the
# same exports and starts nothing. A partial or stale stack is stopped first
# (tools/live/down.sh). Every wait is bounded (BENCHLEDGER_LIVE_START_TIMEOUT,
# default 60 s). Writes tools/.run/live/live.run (key=value: ports, pids,
# paths) and prints only `export ...` lines on stdout; logs go to stderr.
#
# Needs: target/live-tools/bin/bro (see tools/live/README.md for the build),
# python3, and tools/moto's venv (created on first use).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
LIVE_RUN="${BENCHLEDGER_LIVE_RUN_DIR:-$REPO/tools/.run/live}"
RUN_FILE="$LIVE_RUN/live.run"
BRO="${BENCHLEDGER_LIVE_BRO:-$REPO/target/live-tools/bin/bro}"
TIMEOUT="${BENCHLEDGER_LIVE_START_TIMEOUT:-60}"
SETTLEMENT_KEY_ENV="LIVE_SETTLEMENT_API_KEY"
SETTLEMENT_KEY="${LIVE_SETTLEMENT_API_KEY:-live-settlement-local}"

log() { echo "live/up: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

run_dir=""
script="$HERE/script.json"
policy_lock="$HERE/policy-lock.yaml"
lineage_dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --lineage) lineage_dir="${2:?--lineage needs the run directory of tools/live/manifest.py}"; shift 2 ;;
    --run-dir) run_dir="${2:?--run-dir needs a value}"; shift 2 ;;
    --script) script="${2:?--script needs a value}"; shift 2 ;;
    --policy-lock) policy_lock="${2:?--policy-lock needs a value}"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" >&2; exit 0 ;;
    *) log "usage: $0 [--run-dir DIR] [--script FILE] [--policy-lock FILE]"; exit 2 ;;
  esac
done

# --- the live lineage: moto, the stand-in and the preflight daemon on the ports
# tools/live/manifest.py froze in RUN_DIR/live.json; the groups' daemons start
# on demand (tools/live/daemon.sh start RUN_DIR GROUP). Prints the same exports.
if [[ -n "$lineage_dir" ]]; then
  exec bash "$HERE/lineage-up.sh" "$lineage_dir" "$script"
fi

[[ -x "$BRO" ]] || die "no bro binary at $BRO; build it (tools/live/README.md, 'Build') or set BENCHLEDGER_LIVE_BRO"
[[ -f "$script" ]] || die "no provider script $script"
[[ -f "$policy_lock" ]] || die "no policy lock $policy_lock"
command -v python3 >/dev/null || die "python3 is required"
mkdir -p "$LIVE_RUN"

get() { sed -n "s/^$1=//p" "$RUN_FILE" 2>/dev/null | head -n 1; }
alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }
answers() { python3 - "$1" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=2).read()
EOF
}
print_exports() {
  echo "export BENCHLEDGER_LIVE_RUN_FILE=$RUN_FILE"
  echo "export BENCHLEDGER_AWS_ENDPOINT_URL=$(get moto_url)"
  echo "export BENCHLEDGER_LIVE_BRO_URL=$(get bro_url)"
  echo "export BENCHLEDGER_LIVE_PROVIDER_URL=$(get provider_url)"
  echo "export BENCHLEDGER_LIVE_DIR=$(get run_dir)"
  echo "export $SETTLEMENT_KEY_ENV=$(get settlement_key)"
}

# --- reuse a healthy stack ---------------------------------------------------
if [[ -f "$RUN_FILE" ]]; then
  if alive "$(get moto_pid)" && alive "$(get provider_pid)" && alive "$(get bro_pid)" \
     && answers "$(get moto_url)/_benchledger/health" && answers "$(get provider_url)/health" \
     && answers "$(get bro_url)/health"; then
    log "reusing the running stack ($RUN_FILE)"
    print_exports
    exit 0
  fi
  log "stale or partial stack in $RUN_FILE; stopping it first"
  bash "$HERE/down.sh" >&2 || true
fi

# --- run directory -------------------------------------------------------------
if [[ -z "$run_dir" ]]; then
  run_dir="$LIVE_RUN/run-$(date -u +%Y%m%dT%H%M%SZ)"
fi
mkdir -p "$run_dir"
run_dir="$(cd "$run_dir" && pwd)"
mkdir -p "$run_dir/provider" "$run_dir/bro" "$run_dir/sandboxes" "$run_dir/trials" "$run_dir/out"
log "run directory $run_dir"

cleanup_on_error() {
  local rc=$?
  if [[ $rc -ne 0 ]]; then
    log "startup failed (exit $rc); stopping what was started"
    bash "$HERE/down.sh" >&2 || true
  fi
}
trap cleanup_on_error EXIT

# Write the run file as we go, so down.sh can stop a partial stack.
write_run() {
  local tmp="$RUN_FILE.tmp"
  { for kv in "$@"; do echo "$kv"; done; } > "$tmp"
  mv "$tmp" "$RUN_FILE"
}
declare -a RUN=("run_dir=$run_dir" "settlement_key_env=$SETTLEMENT_KEY_ENV" "settlement_key=$SETTLEMENT_KEY")
write_run "${RUN[@]}"

wait_for() { # name url pid log
  local name="$1" url="$2" pid="$3" logf="$4" deadline=$((SECONDS + TIMEOUT))
  while :; do
    alive "$pid" || { tail -n 30 "$logf" >&2 || true; die "$name exited during startup (log: $logf)"; }
    answers "$url" && return 0
    (( SECONDS < deadline )) || { tail -n 30 "$logf" >&2 || true; die "$name did not answer $url within ${TIMEOUT}s (log: $logf)"; }
    sleep 0.2
  done
}

# --- moto (own run dir, so it never collides with tools/moto's default) ------
moto_exports="$(BENCHLEDGER_RUN_DIR="$LIVE_RUN" BENCHLEDGER_MOTO_START_TIMEOUT="$TIMEOUT" bash "$REPO/tools/moto/start.sh")" \
  || die "tools/moto/start.sh failed"
moto_url="${moto_exports##*=}"
moto_pid="$(sed -n 's/^pid=//p' "$LIVE_RUN/moto.run")"
RUN+=("moto_pid=$moto_pid" "moto_url=$moto_url" "moto_run=$LIVE_RUN/moto.run")
write_run "${RUN[@]}"
log "moto pid $moto_pid on $moto_url"

# --- stand-in provider + settlement API ---------------------------------------
port_file="$run_dir/provider/port"
rm -f "$port_file"
cp "$script" "$run_dir/provider/script.json"
LIVE_SETTLEMENT_API_KEY="$SETTLEMENT_KEY" setsid python3 "$HERE/provider.py" \
  --script "$run_dir/provider/script.json" --log-dir "$run_dir/provider" --port 0 --port-file "$port_file" \
  </dev/null >"$run_dir/provider/provider.log" 2>&1 &
provider_pid=$!
RUN+=("provider_pid=$provider_pid" "provider_log_dir=$run_dir/provider")
write_run "${RUN[@]}"
deadline=$((SECONDS + TIMEOUT))
until [[ -s "$port_file" ]]; do
  alive "$provider_pid" || { cat "$run_dir/provider/provider.log" >&2; die "provider exited during startup"; }
  (( SECONDS < deadline )) || die "provider did not bind within ${TIMEOUT}s"
  sleep 0.1
done
provider_url="http://127.0.0.1:$(tr -d '[:space:]' < "$port_file")"
wait_for provider "$provider_url/health" "$provider_pid" "$run_dir/provider/provider.log"
RUN+=("provider_url=$provider_url" "settlement_api_base=$provider_url/v1")
write_run "${RUN[@]}"
log "provider pid $provider_pid on $provider_url"

# --- bro serve -------------------------------------------------------------------
bro_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
bro_dir="$run_dir/bro"
python3 - "$HERE/bitrouter.yaml.in" "$bro_dir/bitrouter.yaml" "$bro_port" "${provider_url##*:}" "$bro_dir" <<'EOF'
import sys
src, dst, bro_port, provider_port, run_dir = sys.argv[1:]
text = open(src).read()
for k, v in {"@BRO_PORT@": bro_port, "@PROVIDER_PORT@": provider_port, "@RUN_DIR@": run_dir}.items():
    text = text.replace(k, v)
assert "@" not in "".join(l for l in text.splitlines() if not l.lstrip().startswith("#")), "unrendered placeholder"
open(dst, "w").write(text)
EOF
cp "$policy_lock" "$bro_dir/policy-lock.yaml"
bro_url="http://127.0.0.1:$bro_port"
(
  cd "$bro_dir"
  export BITROUTER_HOME="$bro_dir" HOME="$bro_dir" BITROUTER_NO_UPDATE_CHECK=1
  export BITROUTER_WORKFLOW_TRACE_JSONL="$bro_dir/traces.jsonl"
  export BITROUTER_POLICY_DECISION_JSONL="$bro_dir/decisions.jsonl"
  export RUST_LOG="${RUST_LOG:-info}"
  # Harness detection is native (Terminus 2's prompt contract); a hint only if asked.
  unset BITROUTER_WORKFLOW_TRACE_HARNESS
  if [[ -n "${BENCHLEDGER_LIVE_TRACE_HARNESS:-}" ]]; then
    export BITROUTER_WORKFLOW_TRACE_HARNESS="$BENCHLEDGER_LIVE_TRACE_HARNESS"
  fi
  exec setsid "$BRO" serve -c "$bro_dir/bitrouter.yaml" </dev/null >"$bro_dir/daemon.log" 2>&1
) &
bro_pid=$!
RUN+=("bro_pid=$bro_pid" "bro_url=$bro_url" "bro_port=$bro_port" "bro_bin=$BRO" "bro_config=$bro_dir/bitrouter.yaml"
      "bro_db_url=sqlite://$bro_dir/bitrouter.db" "bro_log=$bro_dir/daemon.log"
      "traces=$bro_dir/traces.jsonl" "decisions=$bro_dir/decisions.jsonl")
write_run "${RUN[@]}"
wait_for bro "$bro_url/health" "$bro_pid" "$bro_dir/daemon.log"
log "bro pid $bro_pid on $bro_url ($("$BRO" --version 2>/dev/null || echo '?'))"

trap - EXIT
print_exports
