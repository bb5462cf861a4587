#!/usr/bin/env bash
# Create (or reuse) the Spark check's venv at tools/.venv-spark: Python 3.12
# with PySpark and DuckDB from PyPI (requirements.txt), for check.sh here.
# PySpark bundles Spark's jars (about 400 MB installed); the venv is made once
# and reused while requirements.txt and the interpreter are unchanged.
#
#   bash tools/analysis/spark/setup.sh             # the last line on stdout is the venv's python
#   bash tools/analysis/spark/setup.sh --refreeze  # resolve requirements.in afresh, rewrite requirements.txt
#
# Idempotent (tools/lib/venv312.sh). Override the venv location with
# BENCHLEDGER_SPARK_VENV, the interpreter with PYTHON312.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$HERE/../../lib/venv312.sh" analysis/spark/setup "$HERE" \
  "${BENCHLEDGER_SPARK_VENV:-$(cd "$HERE/../.." && pwd)/.venv-spark}" \
  'import duckdb, pyspark; print("pyspark", pyspark.__version__, "duckdb", duckdb.__version__); assert pyspark.__version__ == "4.3.0" and duckdb.__version__ == "2.0.1"' "$@"
