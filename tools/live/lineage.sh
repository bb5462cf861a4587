#!/usr/bin/env bash
# The live MECHANISM lineage, end to end: from an empty ledger to `report`,
# every group driven by `benchledger run` (real Harbor 0.25.0 and the real
# Terminus 2 agent for every case, every group on its own real BitRouter
# daemon, the AWS gates against moto).
#
#   bash tools/live/lineage.sh [--run-dir DIR] [--keep-up]
#
# Steps (each benchledger call and its exit status in RUN_DIR/lineage.log):
#   1. tools/live/manifest.py writes the manifest pair, the group configs and
#      policy locks, the AWS profile files (RUN_DIR, default
#      tools/.run/live/lineage-<UTC>); tools/live/up.sh --lineage starts moto,
#      the stand-in provider and the preflight daemon.
#   2. init, manifest freeze, sign-off by the operator's and the reviewer's
#      keys (generated for the run in RUN_DIR/keys, listed in the manifest's
#      [signers]), check binary, one sentinel per route (through the
#      preflight daemon, so no group's evidence holds them).
#   3. per group (canary-1, control, r1, r2): the group's daemon
#      (tools/live/daemon.sh start), `group open` (GATE-4: its binary and
#      config hashes), then `benchledger run GROUP`: before every batch
#      identity, quota, residue, daemon health and the sentinels (through the
#      preflight daemon); each case rendered, validated by the frozen
#      validator and launched with the frozen command (tools/live/launch.py:
#      `harbor trial start`, then the trial's outcome rows), up to the frozen
#      concurrency at once (4; BENCHLEDGER_LIVE_CONCURRENCY), a freed slot
#      refilled behind fresh gates, each result ingested as it appears;
#      cleanup monitor samples (peak printed per group); close; the frozen
#      usage export from the group's open, receipt polls (SETTLE-8), traces,
#      decisions, outcomes; cleanup audit; seal, its checkpoint signed with
#      the operator's key. The daemon stops. After an
#      accepted r1 and r2: apply-reward-feedback on the policy database with
#      its SHA-256 before and after (feedback record).
#   4. report --out RUN_DIR/report, verify, audit; the verdicts, the report
#      path and the wall time. Exit 0 only if every group was accepted.
#
# Needs: benchledger built with the `aws` feature (BENCHLEDGER_BIN; unset, a
# `cargo build --features aws` in $CARGO_TARGET_DIR or target is made when
# missing); bro (BENCHLEDGER_LIVE_BRO, default target/live-tools/bin/bro,
# installed from the crate registry when missing); tools/.venv-harbor,
# tools/.venv-moto, tools/.venv-live (made on first use); root (the
# sandbox's chroot). Stdout/stderr: one line per stage, group and `run`
# step, then the verdicts, the stage times and the wall time.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$REPO"
T0=$SECONDS
run=""
keep_up=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --run-dir) run="${2:?}"; shift 2 ;;
    --keep-up) keep_up=1; shift ;;
    *) echo "usage: $0 [--run-dir DIR] [--keep-up]" >&2; exit 2 ;;
  esac
done
# benchledger: BENCHLEDGER_BIN, else one default build with the `aws`
# feature (made here when missing: ~20 min cold on 2 cores) serving every verb.
if [[ -z "${BENCHLEDGER_BIN:-}" ]]; then
  BL="${CARGO_TARGET_DIR:-$REPO/target}/debug/benchledger"
  if [[ ! -x "$BL" ]] || ! grep -q -a -m1 servicequotas "$BL"; then
    echo "live/lineage: building benchledger with the aws feature (cargo build --features aws)" >&2
    nice -n 5 cargo build --features aws >&2 || { echo "live/lineage: the benchledger build failed" >&2; exit 1; }
  fi
  export BENCHLEDGER_AWS_BIN="${BENCHLEDGER_AWS_BIN:-$BL}"
fi
BL="${BENCHLEDGER_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/benchledger}"
[[ -x "$BL" ]] || { echo "live/lineage: no benchledger at $BL (cargo build --no-default-features)" >&2; exit 1; }
# The AWS gates (identity prove, quota check, check residue, cleanup audit:
# GATE-1..3, CLEAN-2) need a build with `--features aws`: BENCHLEDGER_AWS_BIN,
# else BL itself. Every other verb runs from BL.
BL_AWS="${BENCHLEDGER_AWS_BIN:-$BL}"
has_aws() { grep -q -a -m1 servicequotas "$1"; }
if [[ ! -x "$BL_AWS" ]] || ! has_aws "$BL_AWS"; then
  echo "live/lineage: $BL_AWS has no AWS support; set BENCHLEDGER_AWS_BIN to a \`cargo build --features aws\` binary" >&2
  exit 1
fi
# bro: BENCHLEDGER_LIVE_BRO, else target/live-tools/bin/bro, built from the
# crate registry when missing (tools/live/build-bro.sh).
export BENCHLEDGER_LIVE_BRO="${BENCHLEDGER_LIVE_BRO:-$REPO/target/live-tools/bin/bro}"
if [[ ! -x "$BENCHLEDGER_LIVE_BRO" ]]; then
  nice -n 5 bash "$HERE/build-bro.sh" || { echo "live/lineage: the bro build failed" >&2; exit 1; }
fi
run="${run:-$REPO/tools/.run/live/lineage-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$run"
run="$(cd "$run" && pwd)"
LOG="$run/lineage.log"
say() { echo "live/lineage: $*" | tee -a "$LOG" >&2; }
STAGES=()
CURRENT_STAGE=""
STAGE_T=$SECONDS
begin() { end_stage; CURRENT_STAGE="$1"; STAGE_T=$SECONDS; }  # a named stage, timed
end_stage() {
  [[ -n "$CURRENT_STAGE" ]] || return 0
  STAGES+=("$CURRENT_STAGE=$((SECONDS - STAGE_T))s"); CURRENT_STAGE=""
}
declare -A VERDICT
GROUPS_RUN=()
summary() {
  say "verdicts: $(for g in "${GROUPS_RUN[@]}"; do printf '%s=%s ' "$g" "${VERDICT[$g]:-not sealed}"; done)"
  say "requests through bro: $(cat "$run"/groups/*/traces.jsonl 2>/dev/null | wc -l) (traces of the groups)"
  say "stages: ${STAGES[*]}"
  say "wall time $((SECONDS - T0)) s; run directory $run"
}

FINISHING=0
die() {
  end_stage; say "STOP: $*"
  # The ledger as it stands still gets its report, verify and audit.
  if [[ $FINISHING -eq 0 && -d "$run/ledger" ]] && declare -F finish >/dev/null; then finish 1; fi
  summary; exit 1
}

# --- 1. manifest and stack ---------------------------------------------------
begin setup+manifest
PY="$(bash "$HERE/setup.sh" 2>>"$LOG" | tail -n 1)"
if [[ ! -f "$run/manifest.toml" ]]; then
  # The signers (TRUST-3): a fresh Ed25519 key pair each for the operator
  # (sign-off, every seal's checkpoint) and the reviewer (sign-off).
  mkdir -p "$run/keys"
  for who in operator reviewer; do
    "$BL" key generate "live-$who" -o "$run/keys/$who.key" > "$run/keys/$who.vkey" 2>>"$LOG" \
      || die "key generate live-$who failed (see $LOG)"
  done
  "$PY" "$HERE/manifest.py" --run-dir "$run" --operator-vkey "$(cat "$run/keys/operator.vkey")" \
    --reviewer-vkey "$(cat "$run/keys/reviewer.vkey")" >>"$LOG" 2>&1 || die "manifest.py failed (see $LOG)"
fi
J() { python3 - "$run/live.json" "$@" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    d = d[k] if not isinstance(d, list) else d[int(k)]
print(" ".join(d) if isinstance(d, list) else d)
EOF
}
LINEAGE="$(J lineage)"
say "lineage $LINEAGE in $run"
stop_stack() { [[ $keep_up -eq 1 ]] || bash "$HERE/down.sh" --lineage "$run" >>"$LOG" 2>&1; }
trap stop_stack EXIT
begin stack-up
eval "$(bash "$HERE/up.sh" --lineage "$run" 2>>"$LOG")" || die "the stack did not start (see $LOG)"
export AWS_CONFIG_FILE="$(J aws_config)" AWS_SHARED_CREDENTIALS_FILE="$(J aws_credentials)"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL
export PATH="$REPO/tools/.venv-harbor/bin:$PATH" PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
export LITELLM_LOCAL_MODEL_COST_MAP=True
say "stack up after $((SECONDS - T0)) s"

bl() { # benchledger with the run's ledger; argv and exit status logged
  printf '$ benchledger %s\n' "$*" >> "$LOG"
  "$BL" --ledger "$run/ledger" --lock-timeout 120 "$@" 2>>"$LOG"
  local rc=$?
  printf '# exit %s\n' "$rc" >> "$LOG"
  return $rc
}
must() { bl "$@" >>"$LOG" || die "benchledger $* (exit $?; see $LOG)"; }
PRIVATE="$run/manifest.private.toml"

# --- 2. freeze, sign off, preflight -----------------------------------------
begin freeze+preflight
if [[ ! -d "$run/ledger" ]]; then
  # The central host is provisioned by `run` (issue 30): the network it is
  # launched into is moto's, read now that moto is up.
  python3 "$HERE/central_network.py" --endpoint "$BENCHLEDGER_AWS_ENDPOINT_URL" \
    --manifest "$run/manifest.toml" >>"$LOG" 2>&1 || die "central_network.py failed (see $LOG)"
  must init
  must manifest freeze "$run/manifest.toml" --private "$PRIVATE"
  must manifest sign-off --role operator --key "$run/keys/operator.key"
  must manifest sign-off --role reviewer --key "$run/keys/reviewer.key"
  must check binary --path "$(J bro)"
  for route in strong balanced economy; do
    must check sentinel --route "$route" --url "http://127.0.0.1:$(J preflight port)"
  done
fi

fed() { # group: whether its feedback is recorded in the ledger
  bl log | python3 -c 'import json,sys
g=sys.argv[1]
sys.exit(0 if any(r["kind"].startswith("feedback_applied") and r["payload"]["group"]["group"]==g
                  for r in map(json.loads, sys.stdin)) else 1)' "$1"
}

feedback() { # group (r1/r2): reward feedback on the policy database (LINEAGE-3)
  local g="$1" db before after out usage
  db="$(J groups "$g" db_path)"; out="$(J groups "$g" out_dir)"
  # The newest usage export `run` made (after its receipt polls, if any).
  usage="$(ls -t "$out"/receipt-polls/usage-*.jsonl 2>/dev/null | head -n 1)"
  usage="${usage:-$out/usage.jsonl}"
  # bro wants one outcome per traced request; the ledger took them
  # task-scoped (JOIN-3): each trial's reward copied onto its requests for
  # bro's input only (bro keeps each request's transport outcome apart).
  python3 "$HERE/feedback_outcomes.py" --traces "$(J groups "$g" trace_path)" \
    --outcomes "$(J groups "$g" outcome_path)" --configs "$out/trial-configs" \
    --out "$out/feedback-outcomes.jsonl" 2>>"$LOG" || die "feedback outcomes of $g (see $LOG)"
  before="$(sha256sum "$db" | cut -d' ' -f1)"
  "$(J bro)" workflow-state apply-reward-feedback --database-url "sqlite://$db" \
    --traces "$(J groups "$g" trace_path)" --cloud-usage "$usage" \
    --outcomes "$out/feedback-outcomes.jsonl" --policy-decisions "$(J groups "$g" decision_path)" \
    > "$out/feedback.log" 2>&1
  local rc=$?
  after="$(sha256sum "$db" | cut -d' ' -f1)"
  say "  $g feedback: exit $rc, $(tr -d '\r' < "$out/feedback.log" | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^$' | tail -n 1); policy db sha256 $before -> $after"
  [[ $rc -eq 0 ]] || die "apply-reward-feedback failed for $g"
  must feedback record "$g" --before "$before" --after "$after"
}

peak() { # group: the most run-tagged sandboxes one of its cleanup monitor samples saw
  bl log | python3 -c 'import json,sys
g=sys.argv[1]
print(max((r["payload"]["sandbox_count"] for r in map(json.loads, sys.stdin)
           if r["kind"].startswith("monitor_sampled") and r["payload"]["group"]["group"]==g), default="none"))' "$1"
}

group() { # name: the daemon, group open, then `benchledger run` to the seal
  local g="$1" t=$SECONDS url rc
  begin "$g"; GROUPS_RUN+=("$g")
  say "group $g"
  # The ledger is the only memory: a sealed group is skipped, an open one
  # (say, after a kill) is run on without a second `group open`.
  local next
  next="$(bl run "$g" --plan --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["next"]["step"])')"
  if [[ "$next" == done ]]; then
    VERDICT[$g]="$(bl gate "$g" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"])')"
    say "group $g was sealed before: ${VERDICT[$g]}"
    [[ "${VERDICT[$g]}" == accepted ]] || finish 1
    case "$g" in r1|r2) fed "$g" || feedback "$g" ;; esac
    return 0
  fi
  url="$(bash "$HERE/daemon.sh" start "$run" "$g" 2>>"$LOG")" || die "daemon of $g"
  if [[ "$next" == open_group ]]; then
    must group open "$g" --binary-sha256 "$(J bro_sha256)" --config-sha256 "$(J groups "$g" config_sha256)" \
      --ports "$(J groups "$g" port)" --db "$(J groups "$g" db_path)" --out "$(J groups "$g" out_dir)"
  fi
  # run: before every batch the AWS gates (moto), the daemon's health and
  # the sentinels (through the preflight daemon, so no sentinel request is
  # in the group's traces); each case rendered, validated and launched with
  # the frozen command (tools/live/launch.py: Harbor + Terminus 2, then the
  # trial's outcome rows), its result ingested; the cleanup monitor; close;
  # the frozen usage export, receipt polls, traces, decisions, outcomes;
  # cleanup audit; seal.
  printf '$ benchledger run %s\n' "$g" >> "$LOG"
  "$BL_AWS" --ledger "$run/ledger" --lock-timeout 120 run "$g" --daemon-url "$url" \
    --sentinel-url "http://127.0.0.1:$(J preflight port)" --private "$PRIVATE" --key "$run/keys/operator.key" \
    > "$run/groups/$g/run.out" 2> >(tee -a "$LOG" "$run/groups/$g/run.err" | sed -u "s/^/  /" >&2)
  rc=$?
  printf '# exit %s\n' "$rc" >> "$LOG"
  cat "$run/groups/$g/run.out" >> "$LOG"
  bash "$HERE/daemon.sh" stop "$run" "$g" 2>>"$LOG"
  VERDICT[$g]="$(sed -n "s/^$g sealed: //p" "$run/groups/$g/run.out" | head -n 1)"
  VERDICT[$g]="${VERDICT[$g]:-not sealed (run exit $rc)}"
  say "group $g sealed: ${VERDICT[$g]} ($((SECONDS - t)) s; sandbox peak $(peak "$g") of concurrency $(J concurrency))"
  if [[ "${VERDICT[$g]}" != accepted ]]; then
    grep -v '^ *$' "$run/groups/$g/run.out" | sed 's/^/    /' | tee -a "$LOG" >&2
    say "group $g was not accepted: the lineage stops here"
    finish 1
  fi
  case "$g" in r1|r2) feedback "$g" ;; esac
}

finish() { # exit status: report, verify, audit of the ledger as it stands
  FINISHING=1
  begin report+verify+audit
  must report --out "$run/report"
  must verify
  must audit
  end_stage
  say "report: $run/report/report.md"
  summary
  exit "$1"
}

for g in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["groups"]))' "$run/live.json"); do
  group "$g"
done
finish 0
