#!/usr/bin/env python3
"""The outcome file BitRouter's `apply-reward-feedback` needs, from a group's
task-scoped outcomes: one request-scoped row per traced request.

    python3 tools/live/feedback_outcomes.py --traces TRACES --outcomes OUTCOMES \
        --configs DIR --out FILE

bro 1.0.0-alpha.35 admits reward feedback only when every trace joins exactly
one outcome by request id (`reward feedback integrity: outcome join
incomplete`, core/workflow_state/archive.rs), and itself keeps each
request's transport outcome beside the reward, so a request that did not
complete is not learned from as a model failure. The ledger takes the
outcomes task-scoped (JOIN-3, BIND-5; tools/live/launch.py writes them); this
copies each trial's reward onto its requests for bro's input only. A trace
belongs to a trial by the Terminus 2 session id in its body (`session_id`,
also the `x-session-id` header): the `agent.kwargs.session_id` of the
TrialConfig `run` rendered for the case (`--configs`: the group's
`out_dir/trial-configs`). Exit 1 if a trace has no trial or a trial no outcome.
"""

import argparse
import json
import sys
from pathlib import Path


def rows(path: Path):
    with path.open() as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", required=True, type=Path)
    ap.add_argument("--outcomes", required=True, type=Path, help="the group's task-scoped outcome rows")
    ap.add_argument("--configs", required=True, type=Path, help="the rendered TrialConfigs of the group")
    ap.add_argument("--out", required=True, type=Path)
    a = ap.parse_args()
    trial_of_session = {}
    for p in sorted(a.configs.glob("*.json")):
        c = json.loads(p.read_text())
        trial_of_session[c["agent"]["kwargs"]["session_id"]] = c["trial_name"]
    outcome_of_trial = {o["trial_name"]: o for o in rows(a.outcomes)}
    out, problems = [], []
    for t in rows(a.traces):
        session = (t.get("raw_body") or {}).get("session_id") or (t.get("headers") or {}).get("x-session-id")
        o = outcome_of_trial.get(trial_of_session.get(session, ""))
        if o is None:
            problems.append(f"trace {t['id']} (session {session}) has no trial with an outcome")
            continue
        out.append({**o, "request_id": t["id"]})
    for p in problems:
        print(f"live/feedback_outcomes: {p}", file=sys.stderr)
    a.out.write_text("".join(json.dumps(r) + "\n" for r in out))
    print(f"live/feedback_outcomes: {len(out)} request rows from {len(outcome_of_trial)} trials", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
