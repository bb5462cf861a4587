#!/usr/bin/env bash
# The shared SQL of tools/analysis/sql/ on DuckDB and on Spark (issue 31
# item 7): the recorded ledger replay-tests/ledgers/partition-names.jsonl
# (lineages labelled "001", "1" and "2026-07-10") is imported and exported
# with `export --parquet`, and check_engines.py runs the SQL unchanged on
# DuckDB and on PySpark in local mode, each with its partition type
# inference on, and checks both return the rows written there by hand.
# Exits non-zero on any difference.
#
#   bash tools/analysis/spark/check.sh
#
# Needs a Java 17+ runtime for Spark: when `java` is missing and this runs
# as root (CI), Debian's openjdk-17-jre-headless is installed. The venv
# (PySpark and DuckDB, tools/.venv-spark) is made once and reused.
set -euo pipefail
cd "$(dirname "$0")/../../.."

if ! command -v java >/dev/null 2>&1; then
  if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "== no java on PATH: installing Debian's openjdk-17-jre-headless =="
    timeout -k 10 600 apt-get update -qq
    DEBIAN_FRONTEND=noninteractive timeout -k 10 900 apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    echo "tools/analysis/spark/check.sh: Spark needs a Java 17+ runtime on PATH (e.g. apt-get install openjdk-17-jre-headless)" >&2
    exit 1
  fi
fi

PY="$(bash tools/analysis/spark/setup.sh | tail -n 1)"
echo "== build benchledger with the parquet feature =="
cargo build --quiet --no-default-features --features parquet
BIN="${CARGO_TARGET_DIR:-target}/debug/benchledger"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$BIN" --ledger "$work/ledger" import --jsonl replay-tests/ledgers/partition-names.jsonl >/dev/null
"$BIN" --ledger "$work/ledger" export --parquet -o "$work/dataset" 2>/dev/null >/dev/null

echo "== the shared SQL on DuckDB and on Spark (local mode), lineages 001, 1 and 2026-07-10 =="
# Spark's JVM is a child of Python: timeout ends the whole process group.
timeout -k 10 900 "$PY" tools/analysis/spark/check_engines.py "$work/dataset" 2> "$work/spark.log" || {
  rc=$?; tail -n 40 "$work/spark.log" >&2; exit "$rc"
}
