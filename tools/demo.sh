#!/usr/bin/env bash
# The main job on the embedded default: an auditor replays a recorded
# lineage (a short-13 control + r1 + r2 run, committed as a canonical JSONL
# export) into a fresh sled ledger in ./demo-ledger, verifies every link,
# re-derives every sealed verdict from the log, and prints the lineage and
# each group's verdict table. Builds without the AWS feature, so it takes
# minutes.
#
#   bash tools/demo.sh [EXPORT.jsonl]
set -euo pipefail
cd "$(dirname "$0")/.."

export_file="${1:-replay-tests/ledgers/short13-accepted.jsonl}"
ledger_dir="demo-ledger"

cargo build --release --no-default-features --quiet --bin benchledger
bl="${CARGO_TARGET_DIR:-target}/release/benchledger"

rm -rf "${ledger_dir}"
echo "== import ${export_file} into ${ledger_dir} (every line re-verified byte for byte) =="
"${bl}" --ledger "${ledger_dir}" import --jsonl "${export_file}"
echo "== verify: every link recomputed from seq 0 =="
"${bl}" --ledger "${ledger_dir}" verify
echo "== audit: every sealed verdict re-derived from the log and compared row by row =="
"${bl}" --ledger "${ledger_dir}" audit
echo "== replay: the lineage and every group's verdict, as pure projections of the log =="
"${bl}" --ledger "${ledger_dir}" replay
