#!/usr/bin/env bash
# The live MECHANISM lineage, end to end, with the verbs benchledger has today
# (what `benchledger run` will replace): from an empty ledger to `report`,
# every case launched through `case start -- <the frozen launch command>`
# (real Harbor 0.25.0, real Terminus 2), every group on its own real
# BitRouter daemon, the AWS gates against moto.
#
#   bash tools/live/lineage.sh [--run-dir DIR] [--keep-up]
#
# Steps (each benchledger call and its exit status in RUN_DIR/lineage.log):
#   1. tools/live/manifest.py writes the manifest pair, the group configs and
#      policy locks, the AWS profile files (RUN_DIR, default
#      tools/.run/live/lineage-<UTC>); tools/live/up.sh --lineage starts moto,
#      the stand-in provider and the preflight daemon.
#   2. init, manifest freeze, sign-off (operator alice, reviewer bob: the
#      example signers the manifest lists), check binary, one sentinel per
#      route (through the preflight daemon, so no group's evidence holds them).
#   3. per group (canary-1, control, r1, r2): identity prove, quota check,
#      check residue; the group's daemon (tools/live/daemon.sh); group open;
#      check daemon-health; per case: case render-config, check config (the
#      frozen validator), case start -- harbor trial start -c CONFIG; then the
#      frozen [evidence] commands (usage export, reconcile per pending id,
#      export again), receipts and outcomes; ingest harbor, traces,
#      decisions, usage, receipts, outcomes; group close; cleanup audit;
#      group seal. After an accepted r1 and r2: apply-reward-feedback on the
#      policy database with its SHA-256 before and after (feedback record).
#   4. report --out RUN_DIR/report, verify, audit; the verdicts, the report
#      path and the wall time. Exit 0 only if every group was accepted.
#
# Needs: benchledger (BENCHLEDGER_BIN; unset, a `cargo build --features aws`
# in $CARGO_TARGET_DIR or target is made when missing and serves every verb;
# BENCHLEDGER_AWS_BIN may name another binary for the AWS gate verbs); bro (BENCHLEDGER_LIVE_BRO,
# default target/live-tools/bin/bro, installed from the crate registry when
# missing); tools/.venv-harbor, tools/.venv-moto, tools/.venv-live (made on
# first use); root (the sandbox's chroot). Stdout/stderr: one line per stage,
# case and group, then the verdicts, the stage times and the wall time.
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
# crate registry when missing (the pinned version; ~15-35 min cold on 2 cores).
export BENCHLEDGER_LIVE_BRO="${BENCHLEDGER_LIVE_BRO:-$REPO/target/live-tools/bin/bro}"
if [[ ! -x "$BENCHLEDGER_LIVE_BRO" ]]; then
  root="$(dirname "$(dirname "$BENCHLEDGER_LIVE_BRO")")"
  echo "live/lineage: building bro 1.0.0-alpha.35 into $root" >&2
  CARGO_TARGET_DIR="${BRO_BUILD_DIR:-$REPO/target/bro-build}" nice -n 5 cargo install bitrouter \
    --version =1.0.0-alpha.35 --no-default-features --features core --locked --root "$root" >&2 \
    || { echo "live/lineage: the bro build failed" >&2; exit 1; }
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
  [[ -n "${MONITOR_PID:-}" ]] && { touch "$MONITOR_FLAG"; wait "$MONITOR_PID"; MONITOR_PID=""; }
  # The ledger as it stands still gets its report, verify and audit.
  if [[ $FINISHING -eq 0 && -d "$run/ledger" ]] && declare -F finish >/dev/null; then finish 1; fi
  summary; exit 1
}

# --- 1. manifest and stack ---------------------------------------------------
begin setup+manifest
PY="$(bash "$HERE/setup.sh" 2>>"$LOG" | tail -n 1)"
if [[ ! -f "$run/manifest.toml" ]]; then
  "$PY" "$HERE/manifest.py" --run-dir "$run" >>"$LOG" 2>&1 || die "manifest.py failed (see $LOG)"
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
must_aws() { BL="$BL_AWS" must "$@"; }  # an AWS gate verb
PRIVATE="$run/manifest.private.toml"

# --- 2. freeze, sign off, preflight -----------------------------------------
begin freeze+preflight
if [[ ! -d "$run/ledger" ]]; then
  must init
  must manifest freeze "$run/manifest.toml" --private "$PRIVATE"
  must manifest sign-off --role operator --name alice
  must manifest sign-off --role reviewer --name bob
  must check binary --path "$(J bro)"
  for route in strong balanced economy; do
    must check sentinel --route "$route" --url "http://127.0.0.1:$(J preflight port)"
  done
fi

# The frozen plan, as the ledger holds it (argv templates filled here).
PLAN="$run/plan.json"
bl manifest show --json > "$PLAN" || die "manifest show"
plan() { python3 - "$PLAN" "$@" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = d.get("plan") or d.get("manifest", {}).get("plan")
if p is None:
    sys.exit("no plan in manifest show --json")
cur = p
for k in sys.argv[2].split("."):
    cur = cur[k]
values = dict(a.split("=", 1) for a in sys.argv[3:])
for word in cur:
    for k, v in values.items():
        word = word.replace("{" + k + "}", v)
    print(word)
EOF
}

trial_name() { echo "${2}__${1}-${3}"; }  # group task trial (schema::names::trial_name)

run_case() { # group task trial
  local g="$1" task="$2" trial="$3"
  local case="$task/$trial" cfg="$run/configs/$g/$task-$trial.json"
  mkdir -p "$run/configs/$g"
  must case render-config "$g" "$case" -o "$cfg"
  mapfile -t validator < <(plan binding.validator.command "config=$cfg")
  must check config --config "$cfg" -- "${validator[@]}"
  mapfile -t launch < <(plan launch.command "config=$cfg")
  local t=$SECONDS
  bl case start "$g" "$case" --config "$cfg" --json -- "${launch[@]}" > "$run/configs/$g/$task-$trial.start.json" \
    || die "case start $g $case"
  local reward
  reward="$(python3 -c 'import json,sys,glob
r=[json.load(open(p)) for p in glob.glob(sys.argv[1]+"/*/result.json") if json.load(open(p)).get("trial_name")==sys.argv[2]]
print(((r[0].get("verifier_result") or {}).get("rewards") or {}).get("reward","no result") if r else "no result")' \
    "$(J jobs_dir)/$(J groups "$g" job_name)" "$(trial_name "$g" "$task" "$trial")")"
  ingest_harbor "$g"
  say "  $g $case: $((SECONDS - t)) s, reward $reward"
}

gather() { # group: the frozen [evidence] commands, receipts, outcomes
  local g="$1" out db
  out="$(J groups "$g" out_dir)"; db="$(J groups "$g" db_path)"
  mkdir -p "$out"
  local since_fix=()
  mapfile -t export1 < <(plan evidence.usage_export "db_path=$db" "out=$out/usage-before-reconcile.jsonl")
  # r1..r3 share the policy database (LINEAGE-8): bound the scan to this
  # group's daemon (JOIN-2: a window bounds a scan, never decides membership).
  if [[ -f "$run/groups/$g/opened_at" ]]; then
    local since; since="$(cat "$run/groups/$g/opened_at")"
    for i in "${!export1[@]}"; do [[ "${export1[$i]}" == --since ]] && export1[$((i + 1))]="$since"; done
  fi
  "${export1[@]}" >>"$LOG" 2>&1 || die "usage export of $g"
  mapfile -t pending < <(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l)
    if r.get("reconciliation_status")=="pending": print(r["request_id"])' "$out/usage-before-reconcile.jsonl")
  for id in "${pending[@]}"; do
    mapfile -t rec < <(plan evidence.reconcile "db_path=$db" "request_id=$id")
    "${rec[@]}" >>"$LOG" 2>&1 || say "  reconcile $id exit $?"
  done
  local export2=("${export1[@]}")
  for i in "${!export2[@]}"; do [[ "${export2[$i]}" == "$out/usage-before-reconcile.jsonl" ]] && export2[$i]="$out/usage.jsonl"; done
  "${export2[@]}" >>"$LOG" 2>&1 || die "usage export of $g"
  # Receipts: bro writes no receipt file; the authoritative receipt of each
  # reconciled row is inside it (as the settlement API answered it).
  python3 -c 'import json,sys
with open(sys.argv[2],"w") as f:
    for l in open(sys.argv[1]):
        r=json.loads(l).get("authoritative_receipt")
        if r: f.write(json.dumps(r)+"\n")' "$out/usage.jsonl" "$out/receipts.jsonl"
  python3 "$HERE/outcomes.py" --traces "$(J groups "$g" trace_path)" --configs "$run/configs/$g" \
    --trials "$(J jobs_dir)/$(J groups "$g" job_name)" --out "$(J groups "$g" outcome_path)" >>"$LOG" 2>&1 \
    || die "outcomes of $g"
  say "  $g evidence: $(wc -l < "$(J groups "$g" trace_path)") traces, ${#pending[@]} pending reconciled, $(wc -l < "$out/receipts.jsonl") receipts"
}

ingest_harbor() { # group: its trials so far (CASE-7: a case is terminal once its result is in)
  local g="$1" job
  job="$(J jobs_dir)/$(J groups "$g" job_name)"
  # `harbor trial start` writes trial directories only; a job.log (not
  # evidence, never listed) marks the directory as the group's one job.
  grep -h "case start $g " "$LOG" > "$job/job.log"
  must ingest harbor "$g" "$job"
}

ingest() { # group
  local g="$1" f
  ingest_harbor "$g"
  must ingest traces "$g" "$(J groups "$g" trace_path)"
  f="$(J groups "$g" decision_path)"; [[ -s "$f" ]] && must ingest decisions "$g" "$f"
  must ingest usage "$g" "$(J groups "$g" out_dir)/usage.jsonl"
  f="$(J groups "$g" out_dir)/receipts.jsonl"; [[ -s "$f" ]] && must ingest receipts "$g" "$f"
  must ingest outcomes "$g" "$(J groups "$g" outcome_path)"
}

feedback() { # group (r1/r2): reward feedback on the policy database (LINEAGE-3)
  local g="$1" db before after out
  db="$(J groups "$g" db_path)"; out="$(J groups "$g" out_dir)"
  before="$(sha256sum "$db" | cut -d' ' -f1)"
  "$(J bro)" workflow-state apply-reward-feedback --database-url "sqlite://$db" \
    --traces "$(J groups "$g" trace_path)" --cloud-usage "$out/usage.jsonl" \
    --outcomes "$(J groups "$g" outcome_path)" --policy-decisions "$(J groups "$g" decision_path)" \
    > "$out/feedback.log" 2>&1
  local rc=$?
  after="$(sha256sum "$db" | cut -d' ' -f1)"
  say "  $g feedback: exit $rc, $(tr -d '\r' < "$out/feedback.log" | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^$' | tail -n 1); policy db sha256 $before -> $after"
  [[ $rc -eq 0 ]] || die "apply-reward-feedback failed for $g"
  must feedback record "$g" --before "$before" --after "$after"
}

# The monitor (CLEAN-2's peak): one `cleanup monitor --max-samples 1` every
# MONITOR_INTERVAL seconds while the group's cases run; stopped between
# samples (a flag file), never by a signal in the middle of an append.
MONITOR_INTERVAL="${BENCHLEDGER_LIVE_MONITOR_INTERVAL:-15}"
MONITOR_PID=""
MONITOR_FLAG=""
monitor_start() { # group
  local flag="$run/groups/$1/monitor.stop"
  MONITOR_FLAG="$flag"
  rm -f "$flag"
  ( while [[ ! -f "$flag" ]]; do
      "$BL_AWS" --ledger "$run/ledger" --lock-timeout 120 cleanup monitor "$1" --max-samples 1 \
        --private "$PRIVATE" >/dev/null 2>>"$run/groups/$1/monitor.log"
      for _ in $(seq "$MONITOR_INTERVAL"); do [[ -f "$flag" ]] && break; sleep 1; done
    done ) &
  MONITOR_PID=$!
}
monitor_stop() { # group: stop the loop, then one last sample
  touch "$run/groups/$1/monitor.stop"
  [[ -n "$MONITOR_PID" ]] && wait "$MONITOR_PID"
  MONITOR_PID=""
  BL="$BL_AWS" must cleanup monitor "$1" --max-samples 1 --private "$PRIVATE"
  say "  $1 monitor: $(grep -c 'sample 1/1' "$run/groups/$1/monitor.log" 2>/dev/null || echo 0) samples during the cases"
}

group() { # name
  local g="$1" t=$SECONDS url
  begin "$g"; GROUPS_RUN+=("$g")
  say "group $g"
  must_aws identity prove --private "$PRIVATE"
  must_aws quota check --private "$PRIVATE"
  must_aws check residue --group "$g" --private "$PRIVATE"
  # The sentinels again: GATE-3's freshness window (1800 s) is shorter than
  # a lineage on a loaded machine.
  for route in strong balanced economy; do
    must check sentinel --route "$route" --url "http://127.0.0.1:$(J preflight port)"
  done
  url="$(bash "$HERE/daemon.sh" start "$run" "$g" 2>>"$LOG")" || die "daemon of $g"
  date -u -d "-5 seconds" +%Y-%m-%dT%H:%M:%SZ > "$run/groups/$g/opened_at"
  must group open "$g" --binary-sha256 "$(J bro_sha256)" --config-sha256 "$(J groups "$g" config_sha256)" \
    --ports "$(J groups "$g" port)" --db "$(J groups "$g" db_path)" --out "$(J groups "$g" out_dir)"
  must check daemon-health --group "$g" --url "$url/health"
  monitor_start "$g"
  if [[ "$g" == canary-1 ]]; then
    run_case "$g" "$(J tasks canary task)" "$(J tasks canary trial)"
  else
    for task in $(J tasks scored); do run_case "$g" "$task" t1; done
  fi
  monitor_stop "$g"
  bash "$HERE/daemon.sh" stop "$run" "$g" 2>>"$LOG"
  gather "$g"
  ingest "$g"
  must group close "$g"
  BL="$BL_AWS" bl cleanup audit "$g" --private "$PRIVATE" >>"$LOG" || say "  cleanup audit of $g found residue"
  bl group seal "$g" --json > "$run/groups/$g/seal.json"
  VERDICT[$g]="$(python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1]))
except Exception: print("not sealed"); sys.exit()
print(d.get("status") or d.get("verdict",{}).get("status") or d)' "$run/groups/$g/seal.json")"
  say "group $g sealed: ${VERDICT[$g]} ($((SECONDS - t)) s)"
  if [[ "${VERDICT[$g]}" != accepted ]]; then
    bl gate "$g" >> "$run/groups/$g/gate.txt" 2>&1
    grep -v '^ *$' "$run/groups/$g/gate.txt" | sed 's/^/    /' | tee -a "$LOG" >&2
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
