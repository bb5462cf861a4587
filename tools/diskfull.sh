#!/usr/bin/env bash
# Disk-full test: put a ledger on a small file system of its own, append
# (notes and usage ingests, through the real CLI) until the disk is full,
# and check that every append either succeeded durably (its seq and hash, or
# its rows, are in the ledger afterwards) or failed with exit 4 and a clear
# message, and that the ledger verifies and holds every acknowledged event.
#
#   bash tools/diskfull.sh                 # tmpfs of 8 MiB (DISKFULL_MB), CI
#   DISKFULL_FS=ext4 bash tools/diskfull.sh   # a loop-mounted ext4 image
#
# The file system: a size-limited tmpfs mounted in a private mount namespace
# (`unshare -m`, so nothing leaks into the host's mounts and it vanishes
# with the script); if that is not allowed, `unshare -rm` (a user
# namespace); then a plain mount; with DISKFULL_FS=ext4, or when tmpfs
# cannot be mounted at all, a loop-mounted ext4 image. If no small file
# system can be made, the script fails and says why.
#
# Env: DISKFULL_MB (size, default 8), DISKFULL_FS (tmpfs|ext4),
# BENCHLEDGER_BIN (default target/debug/benchledger, built first),
# DISKFULL_MAX_ATTEMPTS (default 4000), DISKFULL_FULL_STREAK (consecutive
# exit-4 failures that count as full, default 10), DISKFULL_ROUNDS (times
# the disk is filled, a small ballast file freed between rounds, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
mb="${DISKFULL_MB:-8}"
fs="${DISKFULL_FS:-tmpfs}"

say() { echo "diskfull: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

# --- stage 1: outside the namespace: build, then re-enter privately -----------
if [ -z "${DISKFULL_INNER:-}" ]; then
    if [ -z "${BENCHLEDGER_BIN:-}" ]; then
        cargo build --quiet --no-default-features --bin benchledger
        BENCHLEDGER_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/benchledger"
    fi
    [ -x "$BENCHLEDGER_BIN" ] || die "no benchledger binary at $BENCHLEDGER_BIN"
    export BENCHLEDGER_BIN DISKFULL_INNER=1
    if unshare -m --propagation private true 2>/dev/null; then
        exec unshare -m --propagation private bash "$0" "$@"
    elif unshare -rm --propagation private true 2>/dev/null; then
        exec unshare -rm --propagation private bash "$0" "$@"
    fi
    say "no private mount namespace (unshare -m / -rm refused); mounting in this one"
    DISKFULL_SHARED_NS=1 exec bash "$0" "$@"
fi

# --- stage 2: make the small file system ----------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/diskfull.XXXXXX")
mnt="$work/mnt"
mkdir -p "$mnt"
mounted=""
cleanup() {
    if [ -n "$mounted" ]; then umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

why=""
if [ "$fs" = tmpfs ]; then
    if err=$(mount -t tmpfs -o "size=${mb}m,mode=0755" tmpfs "$mnt" 2>&1); then
        mounted=tmpfs
    else
        why="tmpfs: $err"
        say "cannot mount a tmpfs ($err); trying a loop-mounted ext4 image"
        fs=ext4
    fi
fi
if [ "$fs" = ext4 ] && [ -z "$mounted" ]; then
    img="$work/fs.img"
    truncate -s "${mb}M" "$img"
    if ! err=$(mkfs.ext4 -q -F -m 0 "$img" 2>&1); then
        die "cannot make a small file system: ${why:+$why; }mkfs.ext4: $err"
    fi
    if err=$(mount -o loop "$img" "$mnt" 2>&1); then
        mounted=ext4
    else
        die "cannot make a small file system: ${why:+$why; }loop mount of ext4: $err"
    fi
fi
[ -n "$mounted" ] || die "cannot make a small file system: $why"
say "a ${mb} MiB $mounted at $mnt${DISKFULL_SHARED_NS:+ (shared mount namespace)}"

bl() { timeout 120 "$BENCHLEDGER_BIN" --ledger "$mnt/ledger" --lock-timeout 60 "$@"; }

# Ballast: small files freed one by one between fill rounds (so later
# rounds fail at different points: opening the store, in the append, in the
# flush), and a larger one freed after the last round, so the ledger can be
# reopened and verified with room to spare, as an operator would after
# freeing space.
rounds="${DISKFULL_ROUNDS:-2}"
small_kb=$(( mb * 1024 / (2 * rounds) )); [ "$small_kb" -ge 1024 ] || small_kb=1024
big_kb=$(( mb * 1024 / 4 ))
[ $(( small_kb * (rounds - 1) + big_kb )) -le $(( mb * 1024 * 3 / 4 )) ] ||
    die "$rounds rounds need more than ${mb} MiB (1 MiB of ballast per round); raise DISKFULL_MB"
for ((r = 1; r < rounds; r++)); do
    dd if=/dev/zero of="$mnt/ballast.$r" bs=1k count="$small_kb" status=none
done
dd if=/dev/zero of="$mnt/ballast" bs=1k count="$big_kb" status=none
bl init >/dev/null
bl manifest freeze "$root/ledger-schema/examples/manifest.toml" \
    --private "$root/ledger-schema/examples/manifest.private.toml" >/dev/null
# The ingests bind only to an opened group (GATE-4): canary-1's daemon start
# as the frozen manifest has it (the AWS gates are not what this tests).
open_args=$(bl manifest show --json | python3 -c '
import json, sys
m = json.load(sys.stdin)["manifest"]["public"]
g = next(g for g in m["groups"] if g["name"] == "canary-1")
s = m["software"]
print(s["bitrouter_binary_sha256"], s["bitrouter_config_sha256"]["canary-1"], g["ports"][0], g["db_path"], g["out_dir"])')
read -r bin_sha cfg_sha port db out_dir <<<"$open_args"
BENCHLEDGER_AWS_GATES=recorded bl group open canary-1 --binary-sha256 "$bin_sha" \
    --config-sha256 "$cfg_sha" --ports "$port" --db "$db" --out "$out_dir" >/dev/null

# --- stage 3: fill ------------------------------------------------------------------
acks="$work/acks"            # note SEQ HASH | ingest BLAKE3 ROWS FIRST LAST
: >"$acks"
files="$work/files"; mkdir -p "$files"
mapfile -t rows <"$root/replay-tests/fixtures/bitrouter/usage.jsonl"
max="${DISKFULL_MAX_ATTEMPTS:-4000}"
streak_max="${DISKFULL_FULL_STREAK:-10}"
ok_notes=0 ok_ingests=0 ok_rows=0 fail4=0 other=0 streak=0 attempts=0 round=1 fulls=0
declare -A messages=()
filler=$(printf 'disk full probe %.0s' $(seq 1 1000))   # 16,000 bytes of text per note
while [ "$attempts" -lt "$max" ]; do
    if [ "$streak" -ge "$streak_max" ]; then
        fulls=$((fulls + 1))
        say "round $round: the disk is full after $attempts attempts"
        [ "$round" -lt "$rounds" ] || break
        rm -f "$mnt/ballast.$round"
        round=$((round + 1))
        streak=0
    fi
    attempts=$((attempts + 1))
    set +e
    if [ $((attempts % 3)) -eq 0 ]; then
        f="$files/u$attempts.jsonl"
        n=$(( 20 + attempts % 60 ))
        # Fixture rows; the first padded with $attempts blanks (JSON allows
        # them) so every file's bytes, and so its row keys, are new.
        for ((i = 0; i < n; i++)); do
            pad=0; [ "$i" -eq 0 ] && pad=$attempts
            printf '%s%*s\n' "${rows[$(( (i + attempts) % ${#rows[@]} ))]}" "$pad" ''
        done >"$f"
        out=$(bl ingest usage canary-1 "$f" --json 2>"$work/err")
        code=$?
        kind=ingest
    else
        out=$(bl note "${filler:0:16000}" --idempotency-key "probe-$attempts" --json 2>"$work/err")
        code=$?
        kind=note
    fi
    set -e
    case "$code" in
        0)
            streak=0
            if [ "$kind" = note ]; then
                ok_notes=$((ok_notes + 1))
                python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("note", j["seq"], j["hash"])' "$out" >>"$acks"
            else
                ok_ingests=$((ok_ingests + 1))
                python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("ingest", j["file_blake3"], j["appended"], j["first_seq"], j["last_seq"])' "$out" >>"$acks"
                ok_rows=$((ok_rows + $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["appended"])' "$out")))
            fi
            ;;
        4)
            streak=$((streak + 1))
            fail4=$((fail4 + 1))
            # The CLI's own `error:` line (sled may log before it).
            msg=$(grep -m 1 '^error:' "$work/err" || head -n 1 "$work/err")
            if ! grep -qiE 'no space left on device|storage failure' "$work/err"; then
                other=$((other + 1))
                say "exit 4 without a clear message: $msg"
            fi
            key=$(printf '%s' "$msg" | sed -E 's/[0-9]+/N/g' | cut -c1-160)
            messages["$key"]=$(( ${messages["$key"]:-0} + 1 ))
            ;;
        *)
            other=$((other + 1))
            say "attempt $attempts ($kind): exit $code (expected 0 or 4): $(head -c 600 "$work/err")"
            streak=$((streak + 1))
            ;;
    esac
done
used=$(df -k --output=used,avail "$mnt" | tail -1)
say "fill: $fulls times full, $attempts attempts: $ok_notes notes and $ok_ingests ingests ($ok_rows rows) acknowledged, $fail4 exit 4, $other other outcomes; used/avail KiB: $used"
for k in "${!messages[@]}"; do say "  exit 4 x${messages[$k]}: $k"; done
[ "$fulls" -eq "$rounds" ] || die "the disk filled $fulls of $rounds times in $max attempts (raise DISKFULL_MAX_ATTEMPTS or lower DISKFULL_MB)"

# --- stage 4: verify while full, then after freeing the ballast -----------------
set +e
full_out=$(bl verify --json 2>&1); full_code=$?
set -e
say "verify on the full disk: exit $full_code: $(printf '%s' "$full_out" | head -c 300)"
case "$full_code" in 0|4) ;; *) die "verify on the full disk exited $full_code";; esac
rm -f "$mnt/ballast"
verify=$(bl verify --json) || die "verify after freeing space failed: $verify"
bl log >"$work/log.jsonl" || die "log after freeing space failed"
python3 - "$acks" "$work/log.jsonl" "$verify" <<'PY' || die "an acknowledged event is missing"
import json, sys
acks, log, verify = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
assert verify["ok"], verify
recs = [json.loads(l) for l in open(log)]
assert len(recs) == verify["records"], (len(recs), verify["records"])
notes = ingests = 0
for line in open(acks):
    p = line.split()
    if p[0] == "note":
        seq, h = int(p[1]), p[2]
        assert recs[seq]["hash"] == h, f"note at seq {seq} lost or changed"
        notes += 1
    else:
        b3, n, first, last = p[1], int(p[2]), p[3], p[4]
        if n == 0:
            continue
        first, last = int(first), int(last)
        assert last - first + 1 == n
        for i, seq in enumerate(range(first, last + 1)):
            assert recs[seq]["idempotency_key"] == f"usage:{b3[:32]}:{i + 1}", f"row {i + 1} of {b3} lost"
        art = recs[last + 1]
        assert art["kind"] == "artifact_recorded.v1" and art["payload"]["blake3"] == b3, f"artifact of {b3} lost"
        ingests += 1
# No partial ingest: every usage row's file has all its rows and its artifact.
rows, arts = {}, set()
for r in recs:
    k = r.get("idempotency_key") or ""
    if k.startswith("usage:"):
        f, n = k.rsplit(":", 1)
        rows.setdefault(f, []).append(int(n))
    if r["kind"] == "artifact_recorded.v1":
        arts.add("usage:" + r["payload"]["blake3"][:32])
for f, ns in rows.items():
    assert ns == list(range(1, len(ns) + 1)) and f in arts, f"partial ingest {f}"
print(f"diskfull: after freeing space: verify ok, {verify['records']} records; {notes} acknowledged notes and {ingests} acknowledged ingests all present; {len(rows)} ingested files complete, none partial")
PY
# The ledger takes appends again.
bl note "after the disk was full" >/dev/null || die "no append after freeing space"
bl verify >/dev/null || die "verify after the last append"
[ "$other" -eq 0 ] || die "$other appends ended other than 0 or 4 with a clear message"
say "ok: $mounted ${mb} MiB, full $fulls times: $ok_notes notes + $ok_ingests ingests acknowledged and kept, $fail4 refused with exit 4, 0 other outcomes; verify on the full disk exit $full_code"
