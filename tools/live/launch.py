#!/usr/bin/env python3
"""The frozen launch command of the live lineage: run one Harbor 0.25.0 trial,
then write the trial's benchmark outcome row.

    python tools/live/launch.py --live RUN_DIR/live.json --group GROUP --config CONFIG

`benchledger run` fills the manifest's `[launch] command` template
(`--group {group} --config {config}`) and starts this once per case, with the
frozen AWS selector in its environment and its output in the case's log.

1. `harbor trial start -c CONFIG` (the `harbor` beside this Python, i.e.
   tools/.venv-harbor, else the one on PATH); the real Terminus 2 agent talks
   to the group's real `bro serve` through the config's `agent.kwargs.api_base`.
2. When Harbor has exited, one task-scoped `BenchmarkOutcomeRecord` for the
   trial is appended to the group's `outcome_path` (under an exclusive lock,
   so concurrent trials do not interleave): BitRouter writes no outcomes; the
   benchmark does. The verifier's reward belongs to the trial, not to each
   request (JOIN-3: never copied onto every request; BIND-5: a request that
   did not complete, say a weak 429 before a strong fallback, never carries
   the task's success), so the row has no `request_id` and names its trial
   (`trial_name`), by which benchledger joins it to its case.

Harbor runs at a lower CPU priority than its driver (`nice` +HARBOR_NICE):
on a small machine c trials starting together (each imports LiteLLM, seconds
of CPU) would otherwise starve `benchledger run`, which validates and
launches a wave's cases one after the other and samples the sandboxes while
they run; the wave would go out spread over tens of seconds.

Exit status: Harbor's; 70 if Harbor succeeded but the outcome row could not
be written. `run` ingests the trial's result and records this exit either way.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path


# How much nicer than its driver a trial runs (see the docstring).
HARBOR_NICE = 5


def log(msg: str) -> None:
    print(f"live/launch: {msg}", file=sys.stderr, flush=True)


def outcome_row(result: dict) -> dict:
    """The task-scoped outcome of a trial, from Harbor's `result.json`."""
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    reward = rewards.get("reward", 0)
    exc = result.get("exception_info")
    failed = None
    if reward < 1:
        failed = (exc or {}).get("exception_type") or ("agent_exception" if exc else "verifier_failed")
    return {"session_key": result["trial_name"], "task_id": result["task_name"], "reward": reward,
            "failed_reason": failed, "finished_at": result.get("finished_at"),
            "trial_name": result["trial_name"]}


def append_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write("".join(json.dumps(r) + "\n" for r in rows))
        f.flush()
        os.fsync(f.fileno())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--live", required=True, help="RUN_DIR/live.json (tools/live/manifest.py)")
    ap.add_argument("--group", required=True)
    ap.add_argument("--config", required=True, help="the rendered, validated TrialConfig")
    a = ap.parse_args()
    live = json.loads(Path(a.live).read_text())
    group = live["groups"][a.group]
    config = json.loads(Path(a.config).read_text())
    beside = Path(sys.executable).parent / "harbor"  # the venv this runs in
    argv = [str(beside) if beside.exists() else "harbor", "trial", "start", "-c", a.config]
    log(f"nice +{HARBOR_NICE}: " + " ".join(argv))
    rc = subprocess.call(argv, preexec_fn=lambda: os.nice(HARBOR_NICE))
    log(f"harbor exited {rc}")
    result_path = Path(config["trials_dir"]) / config["trial_name"] / "result.json"
    if not result_path.is_file():
        log(f"no {result_path}: no outcome rows (the case has no result)")
        return rc
    try:
        result = json.loads(result_path.read_text())
        row = outcome_row(result)
        append_rows(Path(group["outcome_path"]), [row])
    except (OSError, KeyError, TypeError, ValueError) as e:
        log(f"writing the outcome row of {config['trial_name']} failed: {e}")
        return rc or 70
    log(f"outcome of {config['trial_name']}: reward {row['reward']} in {group['outcome_path']}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
