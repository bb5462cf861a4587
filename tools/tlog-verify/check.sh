#!/usr/bin/env bash
# CI entry point for the independent tlog verifier: set up its venv, check every
# vector of vectors.json with verify.py (no code shared with the Rust module), and
# drive the command line on files cut from the vectors (good ones verify with exit
# 0, tampered ones fail with exit 1), check ledger-schema/vectors/tlog.json against
# the committed vector chain, and (unless TLOG_VERIFY_LIVE=0, or without cargo)
# verify what the CLI writes live: the seals' signed checkpoints, an inclusion
# proof for a receipt, a consistency proof between the seals and the ledger's
# export (the CLI test transparency::a_receipt_and_two_seals_verify_without_the_ledger
# writes them), and a seal's inclusion proof cut from the report's JSON form
# (transparency::the_report_carries_the_signed_checkpoint_and_an_inclusion_proof_of_each_seal),
# and a tiles export read back from its tiles and entry bundles, failing on a
# flipped byte in a tile or a bundle (tiles::a_tiles_export_reads_back_and_a_flipped_byte_fails_naming_the_file). Ends with "N passed, N failed"; exits non-zero on any failure.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="$(bash "$HERE/setup.sh" | tail -n 1)"
VERIFY="$HERE/verify.py"
VECTORS="${1:-$HERE/vectors.json}"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
# expect NAME WANTED_EXIT CMD...: run CMD, compare its exit code.
expect() {
  local name="$1" want="$2" rc=0; shift 2
  "$@" >"$TMP/out.log" 2>&1 || rc=$?
  if [[ $rc -eq $want ]]; then pass "$name"; else
    fail "$name (exit $rc, wanted $want)"; sed 's/^/    /' "$TMP/out.log"; fi
}

# 1. Every vector (the verifier prints its own PASS/FAIL lines and a total).
rc=0
"$PY" "$VERIFY" vectors "$VECTORS" >"$TMP/vectors.log" 2>&1 || rc=$?
grep -E '^FAIL' "$TMP/vectors.log" || true
total="$(tail -n 1 "$TMP/vectors.log")"
if [[ $rc -eq 0 && "$total" =~ ^([0-9]+)\ passed,\ 0\ failed$ ]]; then
  pass "vectors.json: $total"
else
  fail "vectors.json: $total (exit $rc)"; sed 's/^/    /' "$TMP/vectors.log" | tail -n 20
fi

# 2. The command line, on files cut from the vectors.
"$PY" - "$VECTORS" "$TMP" <<'PYEOF'
import json, sys
v = json.load(open(sys.argv[1], encoding="utf-8")); d = sys.argv[2]
def put(name, text):
    with open(f"{d}/{name}", "w", encoding="utf-8", newline="") as f:
        f.write(text)
put("log.vkey", v["keys"]["log"]["verifier_key"] + "\n")
put("witness.vkey", v["keys"]["witness"]["verifier_key"] + "\n")
put("signed.note", v["signed_note"])
put("cosigned.note", v["cosignature"]["cosigned_note"])
put("inclusion.json", v["inclusion_proof_json"])
put("consistency.json", v["consistency"]["proof_json"])
put("old.note", v["consistency"]["old_note"])
put("new.note", v["consistency"]["new_note"])
put("forged.note", v["signed_note"].replace("\n7\n", "\n8\n", 1))
bad = json.loads(v["inclusion_proof_json"]); bad["leaf_index"] = 4
put("bad-inclusion.json", json.dumps(bad, indent=2, ensure_ascii=False) + "\n")
sumdb = v["external_checkpoints"][0]
put("sumdb.vkey", sumdb["verifier_key"] + "\n")
put("sumdb.note", sumdb["note"])
cases = {c["name"]: c for c in v["must_fail"]}
put("empty-inclusion.json", cases["inclusion proof in the empty tree"]["proof_json"])
c = cases["consistency proof from the empty tree (size 0 to 3)"]
put("from-empty.json", c["proof_json"]); put("empty.note", c["old_note"]); put("three.note", c["new_note"])
PYEOF
LOG="@$TMP/log.vkey"
W="@$TMP/witness.vkey"
expect "note verifies with the log key" 0 "$PY" "$VERIFY" note "$TMP/signed.note" --vkey "$LOG"
expect "forged note fails" 1 "$PY" "$VERIFY" note "$TMP/forged.note" --vkey "$LOG"
expect "note with only the witness key fails" 1 "$PY" "$VERIFY" note "$TMP/signed.note" --vkey "$W"
expect "cosigned checkpoint verifies" 0 "$PY" "$VERIFY" checkpoint "$TMP/cosigned.note" --vkey "$LOG" --witness "$W"
expect "checkpoint needs the log key" 1 "$PY" "$VERIFY" checkpoint "$TMP/cosigned.note" --vkey "$W"
expect "inclusion proof verifies (no ledger)" 0 "$PY" "$VERIFY" inclusion "$TMP/inclusion.json" --vkey "$LOG" --witness "$W"
expect "tampered inclusion proof fails" 1 "$PY" "$VERIFY" inclusion "$TMP/bad-inclusion.json" --vkey "$LOG"
expect "consistency proof verifies" 0 "$PY" "$VERIFY" consistency "$TMP/consistency.json" "$TMP/old.note" "$TMP/new.note" --vkey "$LOG" --witness "$W"
expect "consistency with swapped notes fails" 1 "$PY" "$VERIFY" consistency "$TMP/consistency.json" "$TMP/new.note" "$TMP/old.note" --vkey "$LOG"
# Interop (issue 32 item 4): an origin with spaces verifies (sum.golang.org's
# own checkpoint); an inclusion proof in the empty tree and a consistency
# proof from size 0 are refused, as transparency-dev/merkle's vectors expect.
expect "sum.golang.org's checkpoint (origin with spaces) verifies" 0 "$PY" "$VERIFY" checkpoint "$TMP/sumdb.note" --vkey "@$TMP/sumdb.vkey"
expect "inclusion proof in the empty tree fails" 1 "$PY" "$VERIFY" inclusion "$TMP/empty-inclusion.json" --vkey "$LOG"
expect "consistency proof from size 0 fails" 1 "$PY" "$VERIFY" consistency "$TMP/from-empty.json" "$TMP/empty.note" "$TMP/three.note" --vkey "$LOG"
expect "missing file is a usage error" 2 "$PY" "$VERIFY" note "$TMP/nothing.note" --vkey "$LOG"

# 3. The vectors over the vector chain (ledger SPEC section 11).
ROOT="$(cd "$HERE/../.." && pwd)"
expect "ledger-schema/vectors/tlog.json against chain.jsonl" 0 "$PY" "$VERIFY" chain-vectors "$ROOT/ledger-schema/vectors/tlog.json"

# 4. Live output of the CLI.
if [[ "${TLOG_VERIFY_LIVE:-1}" == 1 ]] && command -v cargo >/dev/null; then
  L="$TMP/live"
  rc=0
  (cd "$ROOT" && BENCHLEDGER_TLOG_LIVE_DIR="$L" cargo test --quiet --no-default-features --test cli -- \
    transparency::a_receipt_and_two_seals_verify_without_the_ledger \
    transparency::the_report_carries_the_signed_checkpoint_and_an_inclusion_proof_of_each_seal \
    tiles::a_tiles_export_reads_back_and_a_flipped_byte_fails_naming_the_file) >"$TMP/live.log" 2>&1 || rc=$?
  if [[ $rc -eq 0 && -f "$L/ledger.jsonl" ]]; then pass "the CLI wrote the live artifacts"; else
    fail "the CLI wrote the live artifacts (exit $rc)"; tail -n 20 "$TMP/live.log" | sed 's/^/    /'; fi
  A="@$L/alice.vkey"
  expect "live: the first seal's checkpoint verifies" 0 "$PY" "$VERIFY" checkpoint "$L/seal1.note" --vkey "$A"
  expect "live: the second seal's checkpoint verifies" 0 "$PY" "$VERIFY" checkpoint "$L/seal2.note" --vkey "$A"
  expect "live: the seal checkpoints are not signed by the vectors' key" 1 "$PY" "$VERIFY" checkpoint "$L/seal2.note" --vkey "$LOG"
  expect "live: a receipt's inclusion proof verifies (no ledger)" 0 "$PY" "$VERIFY" inclusion "$L/receipt.inclusion.json" --vkey "$A"
  expect "live: the seals' consistency proof verifies (no ledger)" 0 "$PY" "$VERIFY" consistency "$L/seals.consistency.json" "$L/seal1.note" "$L/seal2.note" --vkey "$A"
  expect "live: the bundle's seal inclusion proof verifies (no ledger)" 0 "$PY" "$VERIFY" inclusion "$L/bundle-seal.inclusion.json" --vkey "$A"
  expect "live: a seal's inclusion proof from the report's JSON verifies (no ledger)" 0 "$PY" "$VERIFY" inclusion "$L/report-seal.inclusion.json" --vkey "@$L/report-alice.vkey"
  expect "live: the export has the first seal's root" 0 "$PY" "$VERIFY" ledger "$L/ledger.jsonl" "$L/seal1.note" --vkey "$A"
  expect "live: the export has the second seal's root" 0 "$PY" "$VERIFY" ledger "$L/ledger.jsonl" "$L/seal2.note" --vkey "$A"
  # One record rewritten (its hash changed, the next prev_hash too): the
  # export no longer has the signed root.
  "$PY" - "$L/ledger.jsonl" "$TMP/rewritten.jsonl" <<'PYEOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
new = "ab" * 32
lines[10]["hash"] = new
lines[11]["prev_hash"] = new
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.writelines(json.dumps(l) + "\n" for l in lines)
PYEOF
  expect "live: a rewritten export does not have the signed root" 1 "$PY" "$VERIFY" ledger "$TMP/rewritten.jsonl" "$L/seal1.note" --vkey "$A"
  # TRUST-8: the ledger as C2SP tlog-tiles (`export --tiles`, 600 records):
  # the tiles and entry bundles give the signed root; one flipped byte in a
  # hash tile, or in an entry bundle, fails.
  T="$L/tiles"
  expect "live: a tiles export gives the signed root" 0 "$PY" "$VERIFY" tiles "$T" --vkey "@$L/tiles-op.vkey"
  flip() { "$PY" -c 'import sys; p, at = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, "rb").read()); b[at] ^= 1; open(p, "wb").write(b)' "$@"; }
  for f in tile/0/001 tile/1/000.p/2 tile/entries/000 tile/entries/002.p/88; do
    rm -rf "$TMP/t" && cp -r "$T" "$TMP/t" && flip "$TMP/t/$f" 40
    expect "live: a flipped byte in $f fails" 1 "$PY" "$VERIFY" tiles "$TMP/t" --vkey "@$L/tiles-op.vkey"
  done
fi

echo "tlog-verify: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
