#!/usr/bin/env bash
# Runs every test of the project from a clean clone: the README's test
# command, and what .ci/run calls. Installs what the tests need itself.
set -euo pipefail
cd "$(dirname "$0")/.."

kills="${CRASHTEST_KILLS:-60}"

echo "== cargo test (unit, CLI, replay) =="
cargo test --all-targets

echo "== kill test: ${kills} SIGKILLs of a writer mid-append =="
cargo run --quiet --example crashtest -- drive --kills "${kills}"
