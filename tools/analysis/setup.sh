#!/usr/bin/env bash
# Create (or reuse) the analysis venv at tools/.venv-analysis: Python 3.12
# with DuckDB from PyPI (requirements.txt), for check.sh and the queries of
# tools/analysis/README.md.
#
#   bash tools/analysis/setup.sh             # the last line on stdout is the venv's python
#   bash tools/analysis/setup.sh --refreeze  # resolve requirements.in afresh, rewrite requirements.txt
#
# Idempotent (tools/lib/venv312.sh). Override the venv location with
# BENCHLEDGER_ANALYSIS_VENV, the interpreter with PYTHON312.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$HERE/../lib/venv312.sh" analysis/setup "$HERE" \
  "${BENCHLEDGER_ANALYSIS_VENV:-$(cd "$HERE/.." && pwd)/.venv-analysis}" \
  'import duckdb; print("duckdb", duckdb.__version__); assert duckdb.__version__ == "2.0.1"' "$@"
