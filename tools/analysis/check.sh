#!/usr/bin/env bash
# The report's headline numbers, reproduced from Parquet with SQL on DuckDB
# (issue 21). For every recorded ledger of replay-tests/ledgers/: import it,
# export its Parquet dataset and the JSON report of each of its lineages,
# and check that the SQL of tools/analysis/sql/ gives the same pass rates,
# costs per group, cost deltas and lifecycle rows to the micro-dollar. Then
# two ledgers appended into one dataset (`export --parquet -o DIR --append`)
# are checked in one pass, and the README's one-line query runs over it.
# Exits non-zero on any disagreement.
#
#   bash tools/analysis/check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

PY="$(bash tools/analysis/setup.sh | tail -n 1)"
echo "== build benchledger with the parquet feature =="
cargo build --quiet --no-default-features --features parquet
BIN="${CARGO_TARGET_DIR:-target}/debug/benchledger"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

lineages_of() {
  "$BIN" --ledger "$1" replay --json |
    "$PY" -c 'import json, sys; print("\n".join(l["lineage"]["lineage"] for l in json.load(sys.stdin)["lineages"]))'
}

# One ledger: its dataset and reports under $work/$name.
export_ledger() {
  local name="$1" dataset="$2"
  local ledger="$work/$name/ledger"
  mkdir -p "$work/$name/reports"
  "$BIN" --ledger "$ledger" import --jsonl "replay-tests/ledgers/$name.jsonl" >/dev/null
  "$BIN" --ledger "$ledger" export --parquet -o "$dataset" 2>/dev/null >/dev/null
  for lineage in $(lineages_of "$ledger"); do
    "$BIN" --ledger "$ledger" report show "$lineage" --format json > "$work/$name/reports/$lineage.json"
  done
}

status=0
echo "== every recorded ledger: SQL over its Parquet vs its report =="
for path in replay-tests/ledgers/*.jsonl; do
  name="$(basename "$path" .jsonl)"
  export_ledger "$name" "$work/$name/dataset"
  "$PY" tools/analysis/check_report.py "$work/$name/dataset" "$work/$name"/reports/*.json || status=1
done

echo "== two ledgers appended into one dataset, checked in one pass =="
multi="$work/multi-lineage"
"$BIN" --ledger "$work/short13-accepted/ledger" export --parquet -o "$multi" 2>/dev/null >/dev/null
if "$BIN" --ledger "$work/short13-accepted/ledger" export --parquet -o "$multi" --append >/dev/null 2>&1; then
  echo "FAIL: a lineage already in the dataset was appended a second time"; status=1
fi
"$BIN" --ledger "$work/replicated-accepted/ledger" export --parquet -o "$multi" --append 2>/dev/null >/dev/null
"$PY" tools/analysis/check_report.py "$multi" \
  "$work/short13-accepted/reports/"*.json "$work/replicated-accepted/reports/"*.json || status=1
echo "== the check fails on a report one micro-dollar off =="
"$PY" - "$work/short13-accepted/reports/short13-kimi-2026-11.json" "$work/off-by-one.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
report["groups"][1]["cost"]["micro_usd"] += 1
json.dump(report, open(sys.argv[2], "w"))
PY
if "$PY" tools/analysis/check_report.py "$work/short13-accepted/dataset" "$work/off-by-one.json" >/dev/null; then
  echo "FAIL: a report one micro-dollar off passed the check"; status=1
else
  echo "ok: the off-by-one report is caught"
fi
"$PY" tools/analysis/query.py "$multi" \
  "SELECT lineage, group_name, SUM(recomputed_micro_usd) AS frozen_price_micro_usd FROM requests GROUP BY lineage, group_name ORDER BY lineage, group_name"

exit "$status"
