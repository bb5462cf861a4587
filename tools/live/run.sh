#!/usr/bin/env bash
# The whole live loopback run, from a fresh stack to collected outputs:
#
#   bash tools/live/run.sh [--keep-up]
#
#   1. tools/live/down.sh, then tools/live/up.sh (new run directory)
#   2. four real Harbor 0.25.0 trials with the real Terminus 2 agent through bro:
#        control   hello-file       model anthropic:claude-sonnet-4-5   (direct, no policy)
#        round     sorted-words     model @auto (policy -> economy qwen; the script's
#                                   429 and timeout faults hit it; the weak model fails)
#        hosted    json-config      model bitrouter:moonshotai/kimi-k2.7-code (rows start
#                                   pending; receipts, one delayed)
#        round     fizzbuzz-script  model @auto (clean: no faults left)
#   3. tools/live/collect.sh (metering-usage, reconcile-metering, reliability-report,
#      bundle, apply-reward-feedback)
#   4. a summary; the stack is stopped unless --keep-up.
# Prints the run directory on stdout. Exit 1 if a step could not run (a trial's
# reward or a fail-closed bundle is a result, not a failure).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
keep_up=0
[[ "${1:-}" == "--keep-up" ]] && keep_up=1

t0=$SECONDS
bash "$HERE/down.sh" >&2 || true
eval "$(bash "$HERE/up.sh")"
RUN_DIR="$BENCHLEDGER_LIVE_DIR"
echo "live/run: stack up in $((SECONDS - t0))s; run directory $RUN_DIR" >&2

trial() { # name task model
  local t=$SECONDS
  python3 "$HERE/trial.py" --task "$2" --model "$3" --case "$2" --trial t1 --trial-name "$1" \
    > "$RUN_DIR/trials/$1.harbor.log" 2>&1 || { echo "live/run: harbor failed for $1 (log $RUN_DIR/trials/$1.harbor.log)" >&2; return 1; }
  echo "live/run: trial $1 ($2, $3) done in $((SECONDS - t))s: $(grep -o "Rewards: .*" "$RUN_DIR/trials/$1.harbor.log" || echo 'no reward')" >&2
}
trial hello-file__control1 hello-file anthropic:claude-sonnet-4-5
trial sorted-words__round1 sorted-words @auto
trial json-config__hosted1 json-config bitrouter:moonshotai/kimi-k2.7-code
trial fizzbuzz-script__round2 fizzbuzz-script @auto

bash "$HERE/collect.sh"
python3 - "$RUN_DIR" <<'EOF' >&2
import json, os, sys
run = sys.argv[1]
out = f"{run}/out"
traces = [json.loads(l) for l in open(f"{out}/traces.jsonl")]
usage = [json.loads(l) for l in open(f"{out}/usage.jsonl")]
decisions = [json.loads(l) for l in open(f"{out}/decisions.jsonl")]
print(f"live/run: {len(traces)} requests through bro (traces), {len(usage)} usage rows, {len(decisions)} decisions")
for t in traces:
    u = next((u for u in usage if u["request_id"] == t["id"]), {})
    print(f"  {t['id'][-4:]}  {t['raw_body'].get('session_id','?'):28} {t['raw_body'].get('model'):38} "
          f"http {t['outcome']['http_status']}  {u.get('provider_id')}:{u.get('model_id')}  "
          f"{u.get('charge_status')}/{u.get('reconciliation_status')}  {u.get('final_charge_micro_usd')}")
EOF
echo "live/run: done in $((SECONDS - t0))s" >&2
if [[ $keep_up -eq 0 ]]; then bash "$HERE/down.sh" >&2; fi
echo "$RUN_DIR"
