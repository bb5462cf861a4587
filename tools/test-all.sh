#!/usr/bin/env bash
# Runs every test of the project from a clean clone: the README's test
# command, and what .ci/run calls. Installs what the tests need itself
# (Python 3.12 venvs for Harbor 0.25.0 and the moto AWS emulator, from PyPI)
# and starts and stops the emulator.
set -euo pipefail
cd "$(dirname "$0")/.."

kills="${CRASHTEST_KILLS:-100}"
section() { echo "== [${SECONDS} s] $* =="; }  # each step with the time it began

# bro (the real BitRouter daemon of the live job at the end) builds from the
# crate registry in the background at nice 19 from the start, in its own
# process group, so it takes only the CPU the tests leave idle (tests that
# wait on processes, pip, Harbor, the live lineage's own waits). Its output
# goes to a log printed if it fails; the group is ended on any exit.
bro_log="$(mktemp)"
setsid nice -n 19 bash tools/live/build-bro.sh > "$bro_log" 2>&1 &
bro_pid=$!
end_bro() { [[ -z "${bro_pid}" ]] || kill -- "-${bro_pid}" 2>/dev/null || true; }
trap end_bro EXIT

section "format and lints: cargo fmt --check, clippy (every target; the length bound on the library)"
cargo fmt --all --check
cargo clippy --no-default-features --features parquet --all-targets -- -D warnings
cargo clippy --no-default-features --lib --bins -- -D warnings -D clippy::too_many_lines
cargo clippy -p benchledger-bench --all-targets -- -D warnings
cargo clippy --no-default-features --features testkit --example sim -- -D warnings

section "cargo test: the core without the AWS SDK (unit, CLI, replay; the replay target runs the driver's simulator on 500 fixed seeds)"
cargo test --no-default-features --all-targets
# --all-targets leaves out the doctests (benchledger::expect's example).
cargo test --no-default-features --doc

section "the bench package: a smoke run of every section at a tiny scale"
cargo test -p benchledger-bench --benches

section "transparency log: the independent Python verifier on the vectors"
bash tools/tlog-verify/check.sh

section "kill test: ${kills} SIGKILLs of a writer mid-append or mid-ingest"
cargo run --quiet --no-default-features --example crashtest -- drive --kills "${kills}"

section "the AWS emulator (moto server with the EC2 vCPU quota)"
bash tools/moto/check.sh

section "AWS gates against the moto server: STS, quota, exact-tag residue, terminate (feature aws)"
bash tools/moto/test-aws.sh

# --- reliability and security harness (issue 10; tools/RELIABILITY.md) ---------
# Races, the secret-guard corpus, the bad-input corpus and the fuzzers run in
# `cargo test` above (FUZZ_CASES scales the fuzzers); these are the rest, short.

section "tamper: ${TAMPER_TRIALS:-200} trials of each damage kind against a 10,000-record ledger"
cargo run --quiet --no-default-features --example tamper -- --trials "${TAMPER_TRIALS:-200}"

section "on-disk tamper: ${DISKTAMPER_TRIALS:-200} trials of bytes flipped, zeroed or truncated in the ledger's files, through the CLI"
cargo build --quiet --no-default-features --bin benchledger
cargo run --quiet --no-default-features --example disktamper -- --trials "${DISKTAMPER_TRIALS:-200}"

section "power loss: the directory image at every sync point of a recorded CLI workload, four durability models"
cargo run --quiet --no-default-features --example powerloss -- --ops "${POWERLOSS_OPS:-12}" --subsets 1

section "disk full: appends on a small file system until it is full"
bash tools/diskfull.sh

section "Harbor 0.25.0 tooling (TrialConfig validation with Harbor's own models)"
bash tools/harbor/check.sh

section "rendered TrialConfigs validated by Harbor 0.25.0's own models (GATE-7)"
bash tools/harbor/validate-rendered.sh

section "trial trees written by Harbor 0.25.0's own models, one per evidence shape, ingested through the CLI (BIND, issue 16)"
trees_log="$(mktemp)"
BENCHLEDGER_HARBOR_PY="$(bash tools/harbor/setup.sh | tail -n 1)" \
  cargo test --no-default-features --test cli harbor_trees -- --ignored 2>&1 | tee "$trees_log"
grep -q '^test result: ok. 1 passed' "$trees_log" || { echo "the Harbor trial-tree test did not run" >&2; exit 1; }
rm -f "$trees_log"

section "Parquet (feature parquet): the writer's tests, then the report's numbers from Parquet with SQL on DuckDB"
cargo test --no-default-features --features parquet --lib cli::parquet
cargo test --no-default-features --features parquet --test cli parquet
bash tools/analysis/check.sh

section "Parquet on Spark: the same SQL on DuckDB and PySpark (local mode) over lineages 001, 1 and 2026-07-10, rows checked by hand (about 1 min warm, +40 s to make the venv)"
bash tools/analysis/spark/check.sh

section "the main job, live (tools/demo.sh): canary-1, control, r1, r2 through \`benchledger run\` on the real BitRouter daemon, Harbor 0.25.0 + Terminus 2 and moto, all on 127.0.0.1; builds bro from the crate registry when missing"
bro_rc=0; wait "${bro_pid}" || bro_rc=$?; bro_pid=""
[[ ${bro_rc} -eq 0 ]] || { cat "${bro_log}" >&2; echo "the background bro build failed (exit ${bro_rc})" >&2; exit 1; }
tail -n 1 "${bro_log}"
live_dir="$(mktemp -d)"
bash tools/demo.sh --run-dir "${live_dir}/run"

echo "== all tests passed in ${SECONDS} s =="
