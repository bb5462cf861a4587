#!/usr/bin/env bash
# Create (or reuse) the Harbor 0.25.0 venv at tools/.venv-harbor.
#
#   bash tools/harbor/setup.sh             # install the frozen requirements.txt
#   bash tools/harbor/setup.sh --refreeze  # resolve requirements.in afresh, rewrite requirements.txt
#
# Idempotent (tools/lib/venv312.sh). The last line on stdout is the venv's python.
# Override the venv location with BENCHLEDGER_HARBOR_VENV, the interpreter with PYTHON312.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$HERE/../lib/venv312.sh" harbor/setup "$HERE" \
  "${BENCHLEDGER_HARBOR_VENV:-$(cd "$HERE/.." && pwd)/.venv-harbor}" \
  'import importlib.metadata as m; v = m.version("harbor"); assert v == "0.25.0", v' "$@"
