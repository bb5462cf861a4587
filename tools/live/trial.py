#!/usr/bin/env python3
"""Render one Harbor 0.25.0 TrialConfig for the live stack and run it.

    python3 tools/live/trial.py --task hello-file [--model @auto] [--trial-name NAME]
        [--run-file tools/.run/live/live.run] [--render-only] [--case CASE] [--trial t1]

The config runs the real Terminus 2 agent (`agent.name = "terminus-2"`) with
`model_name = "openai/<model>"` and `kwargs.api_base = <bro>/v1`, so every model
call goes Terminus 2 -> bro -> stand-in provider; and the live environment
(`environment.import_path = benchledger_live.environment:LiveSandboxEnvironment`)
with the run/role/case/trial tags in `environment.kwargs.tags`. It is written to
<run_dir>/trials/<trial_name>.config.json and started with
`harbor trial start -c FILE` from tools/.venv-harbor (PYTHONPATH=tools/live).
The exit status is Harbor's.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import string
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
HARBOR = REPO / "tools" / ".venv-harbor" / "bin" / "harbor"


def read_run_file(path: Path) -> dict[str, str]:
    if not path.is_file():
        sys.exit(f"live/trial: no run file {path}; start the stack with tools/live/up.sh")
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", required=True, help="a task directory name under tools/live/tasks, or a path")
    ap.add_argument("--model", default="@auto", help="what Terminus 2 asks bro for (default @auto: the policy router)")
    ap.add_argument("--trial-name", help="default <task>__<7 random chars>, as Harbor would")
    ap.add_argument("--run-file", default=os.environ.get("BENCHLEDGER_LIVE_RUN_FILE", str(REPO / "tools/.run/live/live.run")))
    ap.add_argument("--run-tag", default="live-loopback", help="value of the benchledger:run tag")
    ap.add_argument("--case", help="value of the benchledger:case tag (default: the task name)")
    ap.add_argument("--trial", default="t1", help="value of the benchledger:trial tag")
    ap.add_argument("--api-key", default="bitrouter-local", help="the daemon's non-secret local key")
    ap.add_argument("--max-turns", type=int, default=12)
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()

    run = read_run_file(Path(args.run_file))
    task = Path(args.task)
    if not task.is_absolute() and not task.exists():
        task = HERE / "tasks" / args.task
    task = task.resolve()
    if not (task / "task.toml").is_file():
        sys.exit(f"live/trial: {task} is not a Harbor task directory (no task.toml)")
    alphabet = string.ascii_letters + string.digits
    trial_name = args.trial_name or f"{task.name[:32]}__{''.join(secrets.choice(alphabet) for _ in range(7))}"
    run_dir = Path(run["run_dir"])
    config = {
        "trial_name": trial_name,
        "trials_dir": str(run_dir / "trials"),
        "task": {"path": str(task)},
        "agent": {
            "name": "terminus-2",
            "model_name": f"openai/{args.model}",
            "kwargs": {
                "api_base": f"{run['bro_url']}/v1",
                "session_id": trial_name,
                "llm_kwargs": {"api_key": args.api_key},
                "temperature": 0.0,
                "max_turns": args.max_turns,
                "suppress_max_turns_warning": True,
                "record_terminal_session": False,
                "model_info": {"max_input_tokens": 200000, "max_output_tokens": 8192,
                               "input_cost_per_token": 0.0, "output_cost_per_token": 0.0},
            },
        },
        "environment": {
            "import_path": "benchledger_live.environment:LiveSandboxEnvironment",
            "delete": True,
            "kwargs": {
                "sandbox_root": str(run_dir / "sandboxes"),
                "aws_endpoint_url": run["moto_url"],
                "region": "us-east-1",
                "instance_type": "m5.large",
                "tags": {
                    "benchledger:run": args.run_tag,
                    "benchledger:role": "sandbox",
                    "benchledger:case": args.case or task.name,
                    "benchledger:trial": args.trial,
                },
            },
        },
    }
    cfg_path = run_dir / "trials" / f"{trial_name}.config.json"
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(json.dumps(config, indent=2) + "\n")
    print(f"live/trial: wrote {cfg_path}", file=sys.stderr)
    if args.render_only:
        print(cfg_path)
        return 0
    if not HARBOR.exists():
        sys.exit(f"live/trial: no harbor at {HARBOR}; run tools/harbor/setup.sh")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(HERE) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no fetch of litellm's remote price map
    argv = [str(HARBOR), "trial", "start", "-c", str(cfg_path)]
    print("live/trial: " + " ".join(argv), file=sys.stderr)
    return subprocess.call(argv, env=env, cwd=str(run_dir))


if __name__ == "__main__":
    sys.exit(main())
