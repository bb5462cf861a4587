#!/usr/bin/env bash
# Runs the AWS tests of benchledger against a private moto server: the
# `aws::` unit tests (including the `moto_*` ones, #[ignore]d elsewhere) and
# the CLI tests named `moto_*` in replay-tests/cli/main.rs (#[ignore]d likewise).
#
#   bash tools/moto/test-aws.sh                 # both sets
#   bash tools/moto/test-aws.sh ARGS...         # cargo test --features aws ARGS... instead
#
# Starts its own moto server (tools/moto/start.sh) in a fresh run dir, so it
# never reuses or stops another server, exports BENCHLEDGER_AWS_ENDPOINT_URL,
# and stops the server on exit. CARGO_TARGET_DIR and other cargo variables
# pass through.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/benchledger-moto-aws.XXXXXX")"
export BENCHLEDGER_RUN_DIR="$run_dir"
cleanup() {
  bash tools/moto/stop.sh || true
  rm -rf "$run_dir"
}
trap cleanup EXIT

# start.sh prints exactly one line: export BENCHLEDGER_AWS_ENDPOINT_URL=...
line="$(bash tools/moto/start.sh)"
case "$line" in
  "export BENCHLEDGER_AWS_ENDPOINT_URL=http://127.0.0.1:"*) eval "$line" ;;
  *) echo "test-aws: unexpected output from start.sh: $line" >&2; exit 1 ;;
esac
echo "test-aws: moto at $BENCHLEDGER_AWS_ENDPOINT_URL" >&2

# Credentials must never come from the ambient environment in these tests.
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL

if [[ $# -gt 0 ]]; then
  cargo test --features aws "$@"
else
  cargo test --features aws --lib aws:: -- --include-ignored
  cargo test --features aws --test cli moto_ -- --include-ignored
fi
