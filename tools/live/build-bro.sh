#!/usr/bin/env bash
# Builds bro (BitRouter's binary) from the crate registry into the place the
# live lineage looks for it, when it is not there yet:
#
#   bash tools/live/build-bro.sh
#
# BENCHLEDGER_LIVE_BRO (default target/live-tools/bin/bro) is the binary;
# BRO_BUILD_DIR (default target/bro-build) the cargo target directory. The
# pinned version with cargo's dev profile without debug info (4-7 min cold on
# 2 cores, against 14-34 min for the release profile; the same source and
# features, unoptimized, which a loopback lineage of a few dozen requests
# does not notice). BRO_PROFILE=release builds the release profile instead.
# tools/test-all.sh starts it in the background at `nice 19` when the suite
# begins, so the build uses the CPU the tests leave idle.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BRO="${BENCHLEDGER_LIVE_BRO:-$REPO/target/live-tools/bin/bro}"
if [[ -x "$BRO" ]]; then
  echo "live/build-bro: $BRO is there" >&2
  exit 0
fi
root="$(dirname "$(dirname "$BRO")")"
profile=(--debug)
[[ "${BRO_PROFILE:-dev}" == release ]] && profile=()
echo "live/build-bro: building bro 1.0.0-alpha.35 (${BRO_PROFILE:-dev} profile) into $root" >&2
t0=$SECONDS
CARGO_TARGET_DIR="${BRO_BUILD_DIR:-$REPO/target/bro-build}" CARGO_PROFILE_DEV_DEBUG=0 \
  cargo install bitrouter --version =1.0.0-alpha.35 --no-default-features --features core --locked \
  "${profile[@]}" --root "$root" >&2
echo "live/build-bro: bro built in $((SECONDS - t0)) s" >&2
