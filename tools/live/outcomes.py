#!/usr/bin/env python3
"""Benchmark outcome rows of one group: one `BenchmarkOutcomeRecord` per traced
request, joined to the Harbor trial that made it.

    python3 tools/live/outcomes.py --traces TRACES --configs DIR --trials DIR --out FILE

BitRouter writes no outcomes; the benchmark does. A trace belongs to a trial by
the Terminus 2 session id in its body (`session_id`, also the `x-session-id`
header), which is the `agent.kwargs.session_id` of the TrialConfig rendered for
that case (`--configs`: the rendered configs of the group); the trial's reward
is Harbor's `result.json` (`--trials`: the group's trials_dir). Sessions are
diagnostics (JOIN-4): the ledger joins outcomes to traces by request id only.
"""
import argparse
import json
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--traces", required=True)
ap.add_argument("--configs", required=True)
ap.add_argument("--trials", required=True)
ap.add_argument("--out", required=True)
a = ap.parse_args()

session_trial = {}
for name in sorted(os.listdir(a.configs)):
    if name.endswith(".json") and not name.endswith(".start.json"):
        c = json.load(open(os.path.join(a.configs, name)))
        session_trial[c["agent"]["kwargs"]["session_id"]] = c["trial_name"]
results = {}
for name in sorted(os.listdir(a.trials)) if os.path.isdir(a.trials) else []:
    p = os.path.join(a.trials, name, "result.json")
    if os.path.isfile(p):
        r = json.load(open(p))
        results[r["trial_name"]] = r
rows, unmatched = [], 0
for line in open(a.traces) if os.path.exists(a.traces) else []:
    t = json.loads(line)
    body = t.get("raw_body") or {}
    session = body.get("session_id") or (t.get("headers") or {}).get("x-session-id")
    r = results.get(session_trial.get(session, ""))
    if r is None:
        unmatched += 1
        continue
    rewards = (r.get("verifier_result") or {}).get("rewards") or {}
    reward = rewards.get("reward", 0)
    exc = r.get("exception_info")
    failed = None
    if reward < 1:
        failed = (exc or {}).get("exception_type") or ("agent_exception" if exc else "verifier_failed")
    rows.append({"request_id": t["id"], "session_key": r["trial_name"], "task_id": r["task_name"],
                 "reward": reward, "failed_reason": failed, "finished_at": r.get("finished_at")})
os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
with open(a.out, "w") as f:
    for row in rows:
        f.write(json.dumps(row) + "\n")
print(f"outcomes: {len(rows)} rows, {unmatched} traces without a trial", file=sys.stderr)
sys.exit(1 if unmatched else 0)
