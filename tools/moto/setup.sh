#!/usr/bin/env bash
# Create (or reuse) the moto[server]==5.2.5 venv at tools/.venv-moto (boto3 included).
#
#   bash tools/moto/setup.sh             # install the frozen requirements.txt
#   bash tools/moto/setup.sh --refreeze  # resolve requirements.in afresh, rewrite requirements.txt
#
# Idempotent (tools/lib/venv312.sh). The last line on stdout is the venv's python.
# Override the venv location with BENCHLEDGER_MOTO_VENV, the interpreter with PYTHON312.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$HERE/../lib/venv312.sh" moto/setup "$HERE" \
  "${BENCHLEDGER_MOTO_VENV:-$(cd "$HERE/.." && pwd)/.venv-moto}" \
  'import importlib.metadata as m; v = m.version("moto"); assert v == "5.2.5", v' "$@"
