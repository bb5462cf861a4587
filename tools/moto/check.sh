#!/usr/bin/env bash
# CI entry point for the moto emulator: set up the venv, start a private server
# (its own run folder, so a developer's server is never touched), run smoke.py
# against it with a non-default account and quota, and always stop it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="$(bash "$HERE/setup.sh" | tail -n 1)"

export BENCHLEDGER_RUN_DIR="$(cd "$HERE/.." && pwd)/.run/moto-check"
export MOTO_ACCOUNT_ID=210987654321
trap 'bash "$HERE/stop.sh"' EXIT
exports="$(bash "$HERE/start.sh" --quota-vcpu 24)"  # set -e stops here if start fails
eval "$exports"

"$PY" "$HERE/smoke.py" --account "$MOTO_ACCOUNT_ID" --expect-quota-vcpu 24
