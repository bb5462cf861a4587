#!/usr/bin/env bash
# CI entry point for the Harbor tools: set up the venv, validate the shared fixture
# and a deliberately broken copy, regenerate fixtures with Harbor's models (they must
# round-trip and validate), compare their shapes with shared/fixtures, and run Harbor's
# own EC2 environment against a private moto server. Ends with "N passed, N failed".
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TOOLS="$(cd "$HERE/.." && pwd)"
# shared/ lies beside the repo (CI's fresh clone gets a copy there); override with
# BENCHLEDGER_HARBOR_FIXTURES.
FIXTURES="${BENCHLEDGER_HARBOR_FIXTURES:-$(cd "$TOOLS/../.." && pwd)/shared/fixtures/harbor-0.25.0}"
PY="$(bash "$HERE/setup.sh" | tail -n 1)"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
# expect NAME WANTED_EXIT CMD...: run CMD (output kept in $TMP/out.log), compare its exit code.
expect() {
  local name="$1" want="$2" rc=0; shift 2
  "$@" >"$TMP/out.log" 2>&1 || rc=$?
  if [[ $rc -eq $want ]]; then pass "$name"; else
    fail "$name (exit $rc, wanted $want)"; sed 's/^/    /' "$TMP/out.log"; fi
}

V="$HERE/validate_trial_config.py"
if [[ -d "$FIXTURES" ]]; then
  expect "shared trial config is valid" 0 "$PY" "$V" --strict --agent-options "$FIXTURES/trial-config.terminus2.json"
  expect "shared job config is valid" 0 "$PY" "$V" --kind job --strict "$FIXTURES/job-config.json"
  # Broken copy: no task path/name, a non-numeric multiplier.
  "$PY" - "$FIXTURES/trial-config.terminus2.json" "$TMP/broken.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); del d["task"]["path"]; d["timeout_multiplier"] = "fast"
json.dump(d, open(sys.argv[2], "w"))
PYEOF
  expect "broken trial config is rejected" 1 "$PY" "$V" "$TMP/broken.json"
  compare=(--compare "$FIXTURES")
elif [[ "${CI:-}" == true ]]; then
  fail "shared fixtures not found at $FIXTURES"; compare=()
else
  echo "note: $FIXTURES not found; skipping the shared-fixture checks" >&2; compare=()
fi
expect "usage error exits 2" 2 "$PY" "$V"

expect "regen_fixtures (round-trips)" 0 "$PY" "$HERE/regen_fixtures.py" "$TMP/regen" "${compare[@]}"
# Shape comparison is informational (expected differences: the ec2 environment kwargs).
grep -v '^wrote ' "$TMP/out.log" | sed 's/^/    /' || true
expect "regenerated trial config valid" 0 "$PY" "$V" --strict --agent-options \
  "$TMP/regen/trial-config.terminus2.json" "$TMP/regen/trial-config.terminus2.full.json"
expect "regenerated job config valid" 0 "$PY" "$V" --kind job --strict \
  "$TMP/regen/job-config.json" "$TMP/regen/job-config.full.json"

# Harbor's EC2 environment against a private moto server (own run folder).
export BENCHLEDGER_RUN_DIR="$TOOLS/.run/harbor-check"
if exports="$(bash "$TOOLS/moto/start.sh")"; then
  eval "$exports"
  expect "harbor ec2 environment against moto" 0 "$PY" "$HERE/ec2_moto_check.py"
  bash "$TOOLS/moto/stop.sh"
else
  fail "could not start moto (tools/moto/start.sh)"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
