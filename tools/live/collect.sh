#!/usr/bin/env bash
# Collect the real BitRouter outputs of the running live stack into
# <run_dir>/out/, running the real `bro workflow-state` subcommands:
#
#   1. metering-usage       -> out/usage-before-reconcile.jsonl
#   2. reconcile-metering   (every `pending` row, against the stand-in
#                            settlement API, with the frozen --price of the
#                            hosted route)  -> out/reconcile.log
#   3. metering-usage       -> out/usage.jsonl
#   4. reliability-report   -> out/reliability-report.json
#   5. outcomes             -> out/outcomes.jsonl (one row per traced request of
#                            each Harbor trial, joined by the Terminus 2 session id
#                            in the request body; written by this script, not by bro)
#   6. bundle               -> out/bundle/ (+ out/bundle.log; may fail closed)
#   7. apply-reward-feedback on a copy of the DB -> out/feedback.log,
#                            out/policy-db-sha256-{before,after}.txt
#
# plus copies of traces.jsonl, decisions.jsonl, the provider's request log and
# receipts.jsonl, and the settlement receipts one per line (receipts-final.jsonl).
#
#   bash tools/live/collect.sh            # uses tools/.run/live/live.run
# Every command and its exit status is appended to out/commands.log.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
RUN_FILE="${BENCHLEDGER_LIVE_RUN_FILE:-$REPO/tools/.run/live/live.run}"
[[ -f "$RUN_FILE" ]] || { echo "live/collect: no run file $RUN_FILE" >&2; exit 1; }
get() { sed -n "s/^$1=//p" "$RUN_FILE" | head -n 1; }

RUN_DIR="$(get run_dir)"; BRO="$(get bro_bin)"; DB="$(get bro_db_url)"; CONFIG="$(get bro_config)"
OUT="$RUN_DIR/out"; mkdir -p "$OUT"
export "$(get settlement_key_env)=$(get settlement_key)"
CMDLOG="$OUT/commands.log"

run() { # label, then argv; logs argv, rc and duration; never aborts
  local label="$1"; shift
  local t0=$SECONDS rc
  printf '$ %s\n' "$*" >> "$CMDLOG"
  "$@" > "$OUT/$label.log" 2>&1; rc=$?
  printf '# exit %s after %ss (output: %s.log)\n' "$rc" "$((SECONDS - t0))" "$label" >> "$CMDLOG"
  echo "live/collect: $label exit $rc" >&2
  return $rc
}

SINCE="2000-01-01T00:00:00Z"
run metering-usage-1 "$BRO" workflow-state metering-usage --database-url "$DB" \
  --output "$OUT/usage-before-reconcile.jsonl" --since "$SINCE"

mapfile -t PENDING < <(python3 - "$OUT/usage-before-reconcile.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    if row.get("reconciliation_status") == "pending":
        print(row["request_id"])
EOF
)
if [[ ${#PENDING[@]} -gt 0 ]]; then
  args=()
  for id in "${PENDING[@]}"; do args+=(--request-id "$id"); done
  run reconcile "$BRO" workflow-state reconcile-metering --database-url "$DB" \
    --api-base "$(get settlement_api_base)" --api-key-env "$(get settlement_key_env)" \
    --price "ambient:moonshotai/kimi-k2.7-code=0.84,0.84,0.84,3.99" \
    --max-attempts 12 --poll-interval-ms 500 "${args[@]}"
else
  echo "# no pending rows: reconcile-metering not run" >> "$CMDLOG"
fi

run metering-usage-2 "$BRO" workflow-state metering-usage --database-url "$DB" \
  --output "$OUT/usage.jsonl" --since "$SINCE"
run reliability-report "$BRO" workflow-state reliability-report --database-url "$DB" \
  --config "$CONFIG" --output "$OUT/reliability-report.json"

cp "$(get traces)" "$OUT/traces.jsonl" 2>/dev/null || : > "$OUT/traces.jsonl"
cp "$(get decisions)" "$OUT/decisions.jsonl" 2>/dev/null || : > "$OUT/decisions.jsonl"
cp "$(get provider_log_dir)/provider-requests.jsonl" "$OUT/provider-requests.jsonl" 2>/dev/null || true
cp "$(get provider_log_dir)/receipts.jsonl" "$OUT/receipt-polls.jsonl" 2>/dev/null || true

# Final receipts (the last poll per id), one bare SettlementReceipt per line.
python3 - "$OUT/receipt-polls.jsonl" "$OUT/receipts-final.jsonl" <<'EOF'
import json, os, sys
src, dst = sys.argv[1:]
last = {}
if os.path.exists(src):
    for line in open(src):
        rec = json.loads(line)["receipt"]
        last[rec["request_id"]] = rec
with open(dst, "w") as f:
    for rid in sorted(last):
        f.write(json.dumps(last[rid]) + "\n")
EOF

# Outcomes: one row per traced request, by the Terminus 2 session id (= trial name).
python3 - "$OUT/traces.jsonl" "$RUN_DIR/trials" "$OUT/outcomes.jsonl" "$HERE" <<'EOF'
import json, os, sys
traces, trials_dir, dst, here = sys.argv[1:]
sys.path.insert(0, here)
from launch import outcome_row  # the one derivation of a trial's outcome
results = {}
for name in sorted(os.listdir(trials_dir)):
    p = os.path.join(trials_dir, name, "result.json")
    if os.path.isfile(p):
        r = json.load(open(p))
        results[r["trial_name"]] = r
rows = []
for line in open(traces):
    t = json.loads(line)
    body = t.get("raw_body") or {}
    session = body.get("session_id") or (t.get("headers") or {}).get("x-session-id")
    r = results.get(session)
    if r is None:
        continue
    ae = r.get("agent_execution") or {}
    rows.append({"request_id": t["id"], **outcome_row(r), "agent_started_at": ae.get("started_at"),
                 "agent_finished_at": ae.get("finished_at")})
with open(dst, "w") as f:
    for row in rows:
        f.write(json.dumps(row) + "\n")
print(f"{len(rows)} outcome rows", file=sys.stderr)
EOF

rm -rf "$OUT/bundle"
run bundle "$BRO" workflow-state bundle --run-label live-loopback --traces "$OUT/traces.jsonl" \
  --cloud-usage "$OUT/usage.jsonl" --outcomes "$OUT/outcomes.jsonl" \
  --policy-decisions "$OUT/decisions.jsonl" --output-dir "$OUT/bundle"

DBFILE="${DB#sqlite://}"; DBFILE="${DBFILE%%\?*}"
# A consistent copy even while bro holds the database (WAL): sqlite's backup API.
python3 -c 'import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d); d.close(); s.close()' \
  "$DBFILE" "$OUT/policy-feedback.db"
sha256sum "$OUT/policy-feedback.db" | cut -d' ' -f1 > "$OUT/policy-db-sha256-before.txt"
run feedback "$BRO" workflow-state apply-reward-feedback --database-url "sqlite://$OUT/policy-feedback.db" \
  --traces "$OUT/traces.jsonl" --cloud-usage "$OUT/usage.jsonl" --outcomes "$OUT/outcomes.jsonl" \
  --policy-decisions "$OUT/decisions.jsonl"
sha256sum "$OUT/policy-feedback.db" | cut -d' ' -f1 > "$OUT/policy-db-sha256-after.txt"

# Per trial routed by the policy (every one of its traces has a decision): the
# same bundle and feedback on that trial's rows alone, so one failing trial
# (e.g. a timed-out request, usage_origin unknown) does not hide the others.
mapfile -t SESSIONS < <(python3 - "$OUT" <<'EOF2'
import json, os, sys
out = sys.argv[1]
traces = [(json.loads(l), l) for l in open(f"{out}/traces.jsonl")]
usage = {json.loads(l)["request_id"]: l for l in open(f"{out}/usage.jsonl")}
decisions = {json.loads(l).get("request_id"): l for l in open(f"{out}/decisions.jsonl")}
outcomes = {json.loads(l)["request_id"]: l for l in open(f"{out}/outcomes.jsonl")}
by_session = {}
for t, line in traces:
    s = (t.get("raw_body") or {}).get("session_id")
    if s:
        by_session.setdefault(s, []).append((t, line))
for s, ts in sorted(by_session.items()):
    ids = [t["id"] for t, _ in ts]
    if not all(i in decisions for i in ids):
        continue
    d = f"{out}/sessions/{s}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/traces.jsonl", "w") as f:
        for _, line in ts:  # the daemon's bytes, unchanged
            f.write(line if line.endswith("\n") else line + "\n")
    for name, table in (("usage", usage), ("decisions", decisions), ("outcomes", outcomes)):
        with open(f"{d}/{name}.jsonl", "w") as f:
            for i in ids:
                if i in table:
                    f.write(table[i] if table[i].endswith("\n") else table[i] + "\n")
    print(s)
EOF2
)
for s in "${SESSIONS[@]}"; do
  d="$OUT/sessions/$s"
  rm -rf "$d/bundle"
  run "sessions/$s/bundle" "$BRO" workflow-state bundle --run-label "live-$s" --traces "$d/traces.jsonl" \
    --cloud-usage "$d/usage.jsonl" --outcomes "$d/outcomes.jsonl" --policy-decisions "$d/decisions.jsonl" \
    --output-dir "$d/bundle"
  python3 -c 'import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d); d.close(); s.close()' \
    "$DBFILE" "$d/policy-feedback.db"
  sha256sum "$d/policy-feedback.db" | cut -d' ' -f1 > "$d/policy-db-sha256-before.txt"
  run "sessions/$s/feedback" "$BRO" workflow-state apply-reward-feedback --database-url "sqlite://$d/policy-feedback.db" \
    --traces "$d/traces.jsonl" --cloud-usage "$d/usage.jsonl" --outcomes "$d/outcomes.jsonl" \
    --policy-decisions "$d/decisions.jsonl"
  sha256sum "$d/policy-feedback.db" | cut -d' ' -f1 > "$d/policy-db-sha256-after.txt"
done

echo "live/collect: outputs in $OUT" >&2
