#!/usr/bin/env bash
# The stack of a live lineage (called by `tools/live/up.sh --lineage RUN_DIR`):
# moto (AWS), the stand-in provider + settlement API and the preflight daemon
# (the one the provider sentinels go through; no group's evidence), each on the
# 127.0.0.1 port frozen in RUN_DIR/live.json. Idempotent; bounded waits; on a
# failure it stops what it started. Pids in RUN_DIR/stack.run. Prints only
# `export` lines. The groups' daemons: tools/live/daemon.sh.
#
#   bash tools/live/lineage-up.sh RUN_DIR [SCRIPT]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TIMEOUT="${BENCHLEDGER_LIVE_START_TIMEOUT:-60}"
SETTLEMENT_KEY="${LIVE_SETTLEMENT_API_KEY:-live-settlement-local}"
log() { echo "live/up: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
run="$(cd "${1:?usage: lineage-up.sh RUN_DIR [SCRIPT]}" && pwd)"
script="${2:-$HERE/script.json}"
[[ -f "$run/live.json" ]] || die "no $run/live.json (run tools/live/manifest.py first)"
j() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d[sys.argv[2]])' "$run/live.json" "$1"; }
moto_port="$(j moto_port)" provider_port="$(j provider_port)"
moto_url="http://127.0.0.1:$moto_port" provider_url="http://127.0.0.1:$provider_port"
answers() { python3 -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2).read()' "$1" >/dev/null 2>&1; }
exports() {
  echo "export BENCHLEDGER_AWS_ENDPOINT_URL=$moto_url"
  echo "export BENCHLEDGER_LIVE_PROVIDER_URL=$provider_url"
  echo "export BENCHLEDGER_LIVE_DIR=$run"
  echo "export LIVE_SETTLEMENT_API_KEY=$SETTLEMENT_KEY"
}
if answers "$moto_url/_benchledger/health" && answers "$provider_url/health" \
   && bash "$HERE/daemon.sh" status "$run" preflight >/dev/null 2>&1; then
  log "reusing the running stack of $run"; exports; exit 0
fi
started=()
on_error() { local rc=$?; if [[ $rc -ne 0 ]]; then log "startup failed (exit $rc)"; bash "$HERE/down.sh" --lineage "$run" >&2 || true; fi; }
trap on_error EXIT

mkdir -p "$run/moto" "$run/provider"
BENCHLEDGER_RUN_DIR="$run/moto" BENCHLEDGER_MOTO_START_TIMEOUT="$TIMEOUT" \
  bash "$REPO/tools/moto/start.sh" --port "$moto_port" >/dev/null || die "tools/moto/start.sh failed"
log "moto on $moto_url"

if ! answers "$provider_url/health"; then
  cp "$script" "$run/provider/script.json"
  LIVE_SETTLEMENT_API_KEY="$SETTLEMENT_KEY" setsid python3 "$HERE/provider.py" \
    --script "$run/provider/script.json" --log-dir "$run/provider" --port "$provider_port" \
    </dev/null >"$run/provider/provider.log" 2>&1 &
  echo "provider_pid=$!" > "$run/stack.run"
  deadline=$((SECONDS + TIMEOUT))
  until answers "$provider_url/health"; do
    kill -0 "$(sed -n 's/^provider_pid=//p' "$run/stack.run")" 2>/dev/null || { cat "$run/provider/provider.log" >&2; die "provider exited"; }
    (( SECONDS < deadline )) || die "provider did not answer within ${TIMEOUT}s"
    sleep 0.1
  done
fi
log "provider on $provider_url"
bash "$HERE/daemon.sh" start "$run" preflight >/dev/null
trap - EXIT
exports
