#!/usr/bin/env bash
# Create (or reuse) tools/.venv-live: Python 3.12 (the interpreter of
# tools/.venv-harbor) with tools/live/requirements.txt (blake3, for the
# validator's BLAKE3 in tools/live/manifest.py). Idempotent (a stamp of the
# requirements). The last line on stdout is the venv's python.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${BENCHLEDGER_LIVE_VENV:-$REPO/tools/.venv-live}"
REQ="$HERE/requirements.txt"
HARBOR_PY="$(bash "$REPO/tools/harbor/setup.sh" | tail -n 1)"
stamp="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" && "$(cat "$VENV/.stamp" 2>/dev/null)" == "$stamp" ]]; then
  echo "$VENV/bin/python"; exit 0
fi
base="$("$HARBOR_PY" -c 'import sys; print(sys._base_executable)')"
rm -rf "$VENV"
"$base" -m venv "$VENV" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ" >&2
echo "$stamp" > "$VENV/.stamp"
echo "$VENV/bin/python"
