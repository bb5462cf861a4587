#!/usr/bin/env bash
# Create (or reuse) the analysis venv at tools/.venv-analysis: Python 3.12
# with DuckDB from PyPI (requirements.txt), for check.sh and the queries of
# tools/analysis/README.md.
#
#   bash tools/analysis/setup.sh    # the last line on stdout is the venv's python
#
# Idempotent: when the venv exists and its stamp matches requirements.txt and
# the interpreter, nothing is installed. Override the venv location with
# BENCHLEDGER_ANALYSIS_VENV, the interpreter with PYTHON312.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${BENCHLEDGER_ANALYSIS_VENV:-$(cd "$HERE/.." && pwd)/.venv-analysis}"
REQ="$HERE/requirements.txt"

log() { echo "analysis/setup: $*" >&2; }

# A Python 3.12 interpreter, found as tools/harbor/setup.sh finds it:
# $PYTHON312, python3.12 on PATH, then pyenv's versions (each one run, since
# pyenv's shim exists but fails when 3.12 is not the selected version).
find_python312() {
  local c root cands=()
  [[ -n "${PYTHON312:-}" ]] && cands+=("$PYTHON312")
  cands+=("$(command -v python3.12 || true)")
  root="${PYENV_ROOT:-}"
  [[ -z "$root" ]] && command -v pyenv >/dev/null 2>&1 && root="$(pyenv root)"
  [[ -z "$root" && -d "$HOME/.pyenv" ]] && root="$HOME/.pyenv"
  if [[ -n "$root" && -d "$root/versions" ]]; then
    while IFS= read -r c; do cands+=("$c"); done < <(ls -d "$root"/versions/3.12.*/bin/python3.12 2>/dev/null | sort -Vr)
  fi
  for c in "${cands[@]}"; do
    [[ -n "$c" ]] || continue
    if "$c" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else 1)' >/dev/null 2>&1; then
      echo "$c"; return 0
    fi
  done
  return 1
}

PY="$(find_python312)" || {
  log "ERROR: no Python 3.12 found."
  log "Set PYTHON312=/path/to/python3.12, put python3.12 on PATH, or 'pyenv install 3.12'."
  exit 1
}

stamp_now() { { "$PY" -c 'import sys; print(sys.version)'; cat "$REQ"; } | sha256sum | cut -d' ' -f1; }
STAMP="$VENV/.benchledger-stamp"

if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$(stamp_now)" ]]; then
  log "venv up to date ($VENV)"
else
  log "creating venv $VENV with $PY"
  "$PY" -m venv --clear "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$REQ" >&2
  "$VENV/bin/python" -m pip check >&2
  "$VENV/bin/python" -c 'import duckdb; print("duckdb", duckdb.__version__)' >&2
  stamp_now > "$STAMP"
fi

echo "$(cd "$VENV" && pwd)/bin/python"
