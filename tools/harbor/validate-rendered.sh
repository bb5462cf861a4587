#!/usr/bin/env bash
# Renders the one-case TrialConfig of every group of the example manifest
# (canary, control, r1, r2, and a replacement-01) with `benchledger case
# render-config` and validates each with Harbor 0.25.0's own pydantic
# TrialConfig and Terminus2Options (rule GATE-7: the config launched is the
# one Harbor's model accepted). Ends with "N passed, N failed".
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="$(bash "$HERE/setup.sh" | tail -n 1)"
cd "$ROOT"
cargo build --quiet --no-default-features
BL="$ROOT/target/debug/benchledger"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$BL" --ledger "$TMP/ledger" init >/dev/null
"$BL" --ledger "$TMP/ledger" manifest freeze ledger-schema/examples/manifest.toml \
  --private ledger-schema/examples/manifest.private.toml >/dev/null
passed=0 failed=0
for spec in "canary-1 hello-world/c1" "control fix-git/t1" "r1 regex-log/t1" "r2 fix-git/t1" "control password-recovery/t1/replacement-01"; do
  set -- $spec
  out="$TMP/$(echo "$1-$2" | tr '/' '_').json"
  "$BL" --ledger "$TMP/ledger" case render-config "$1" "$2" -o "$out" >/dev/null
  if "$PY" "$HERE/validate_trial_config.py" --strict --agent-options "$out" >"$TMP/v.log" 2>&1; then
    passed=$((passed + 1)); echo "PASS $1 $2: Harbor's TrialConfig accepts the rendered config"
  else
    failed=$((failed + 1)); echo "FAIL $1 $2"; sed 's/^/    /' "$TMP/v.log"
  fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
