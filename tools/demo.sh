#!/usr/bin/env bash
# The main job on the embedded default: an auditor replays a recorded ledger
# export into a fresh sled ledger in ./demo-ledger, verifies every link and
# prints what it holds. Builds without the AWS feature, so it takes minutes.
#
#   bash tools/demo.sh [EXPORT.jsonl]
set -euo pipefail
cd "$(dirname "$0")/.."

export_file="${1:-ledger-schema/vectors/chain.jsonl}"
ledger_dir="demo-ledger"

cargo build --release --no-default-features --quiet
bl=target/release/benchledger

rm -rf "${ledger_dir}"
echo "== import ${export_file} into ${ledger_dir} (every line re-verified byte for byte) =="
"${bl}" --ledger "${ledger_dir}" import --jsonl "${export_file}"
echo "== verify: every link recomputed from seq 0 =="
"${bl}" --ledger "${ledger_dir}" verify
echo "== log: the records, decoded =="
"${bl}" --ledger "${ledger_dir}" log
