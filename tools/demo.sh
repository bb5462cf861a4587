#!/usr/bin/env bash
# The README's main job.
#
#   bash tools/demo.sh [--run-dir DIR] [--keep-up]
#       An operator's lineage on the real programs, all on 127.0.0.1:
#       tools/live/lineage.sh (a sled ledger in a local folder, the real
#       BitRouter daemon, real Harbor 0.25.0 and Terminus 2, the AWS API on
#       moto; it builds and starts what it needs). Its arguments pass through.
#
#   bash tools/demo.sh --recorded [EXPORT.jsonl]
#       For auditors: replay a recorded lineage (by default the short-13
#       control + r1 + r2 run, committed as a canonical JSONL export) into a
#       fresh sled ledger in ./demo-ledger, verify every link, re-derive
#       every sealed verdict from the log and print the lineage and each
#       group's verdict table. Builds without the AWS feature (minutes).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" != --recorded ]]; then
  exec bash tools/live/lineage.sh "$@"
fi
shift
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
