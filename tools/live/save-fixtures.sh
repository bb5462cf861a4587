#!/usr/bin/env bash
# Copy the real outputs of one live run (tools/live/run.sh) into
# replay-tests/fixtures/bitrouter/real-1.0.0-alpha.35/ (README.md there is kept; everything
# else is replaced).
#
#   bash tools/live/save-fixtures.sh RUN_DIR
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
R="${1:?usage: save-fixtures.sh RUN_DIR}"
O="$R/out"
F="$REPO/replay-tests/fixtures/bitrouter/real-1.0.0-alpha.35"
[[ -f "$O/usage.jsonl" ]] || { echo "save-fixtures: no $O/usage.jsonl (run tools/live/collect.sh first)" >&2; exit 1; }

mkdir -p "$F"
find "$F" -mindepth 1 ! -name README.md -exec rm -rf {} +
mkdir -p "$F/bundle" "$F/harbor"
strip() { sed 's/\x1b\[[0-9;]*m//g' "$1"; }

cp "$O"/{traces.jsonl,decisions.jsonl,usage-before-reconcile.jsonl,usage.jsonl,reliability-report.json,outcomes.jsonl,provider-requests.jsonl,receipt-polls.jsonl,commands.log} "$F/"
cp "$O/receipts-final.jsonl" "$F/receipts.jsonl"
strip "$O/reconcile.log" > "$F/reconcile.log"
strip "$O/bundle.log" > "$F/bundle-all-trials.log"
strip "$O/feedback.log" > "$F/feedback-all-trials.log"
for d in "$O"/sessions/*/; do
  s="$(basename "$d")"
  strip "$d/bundle.log" > "$F/bundle-$s.log"
  strip "$d/feedback.log" > "$F/feedback-$s.log"
  for f in policy-db-sha256-before.txt policy-db-sha256-after.txt; do cp "$d/$f" "$F/feedback-$s.$f"; done
  if [[ -d "$d/bundle" ]]; then mkdir -p "$F/bundle-$s"; cp "$d"/bundle/* "$F/bundle-$s/"; fi
done
rmdir "$F/bundle" 2>/dev/null || true
cp "$R/bro/bitrouter.yaml" "$R/bro/policy-lock.yaml" "$F/"
cp "$R/provider/script.json" "$F/provider-script.json"
for cfg in "$R"/trials/*.config.json; do
  t="$(basename "$cfg" .config.json)"
  [[ -f "$R/trials/$t/result.json" ]] || continue
  mkdir -p "$F/harbor/$t"
  cp "$cfg" "$F/harbor/$t/trial-config.input.json"
  cp "$R/trials/$t/config.json" "$R/trials/$t/result.json" "$F/harbor/$t/"
done
python3 - "$R/bro/bitrouter.db" "$F/requests-table.jsonl" <<'EOF'
import json, sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
c.row_factory = sqlite3.Row
with open(sys.argv[2], "w") as f:
    for r in c.execute("select * from requests order by created_at"):
        f.write(json.dumps(dict(r)) + "\n")
EOF
strip "$R/bro/daemon.log" | grep -v '^$' > "$F/daemon.log"
echo "save-fixtures: wrote $F" >&2
