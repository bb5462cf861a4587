#!/usr/bin/env bash
# Create (or reuse) the tlog-verify venv at tools/.venv-tlog (cryptography, for the independent verifier).
#
#   bash tools/tlog-verify/setup.sh             # install the frozen requirements.txt
#   bash tools/tlog-verify/setup.sh --refreeze  # resolve requirements.in afresh, rewrite requirements.txt
#
# Idempotent (tools/lib/venv312.sh). The last line on stdout is the venv's python.
# Override the venv location with BENCHLEDGER_TLOG_VENV, the interpreter with PYTHON312.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$HERE/../lib/venv312.sh" tlog-verify/setup "$HERE" \
  "${BENCHLEDGER_TLOG_VENV:-$(cd "$HERE/.." && pwd)/.venv-tlog}" \
  'from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey' "$@"
