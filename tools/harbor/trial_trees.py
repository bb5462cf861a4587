#!/usr/bin/env python3
"""Write Harbor 0.25.0 trial trees with Harbor's own models, one per evidence shape.

Usage (run with the venv made by tools/harbor/setup.sh):
    trial_trees.py defaults OUT.json
    trial_trees.py write --config RENDERED.json --checksum HEX --started-at RFC3339Z \\
        --shape SHAPE --jobs JOBS_DIR
    trial_trees.py shapes

`defaults` writes the content of Harbor's default TrialConfig (the model's own dump of
`TrialConfig(task=TaskConfig(path=...))`, with the task path, the random trial name and
the job id left out): what benchledger leaves out of a TrialConfig's content when it
compares the config embedded in a result with the config a case launched (rule BIND-1;
`src/schema/trial_content.rs` compiles `tools/harbor/trial-config-defaults.json` in).

`write` builds the TrialConfig from RENDERED.json (what `benchledger case render-config`
wrote) with `TrialConfig.model_validate`, then writes the trial directory Harbor would
leave for it: `JOBS_DIR/<last part of trials_dir>/<trial_name>/` with `config.json`
(`model_dump_json(indent=4, exclude_defaults=True)`, trial/trial.py), `result.json`
(`model_dump_json(indent=4)`, Trial._finalize), `trial.log` and the verifier's reward
file. agent_info comes from a real Terminus2 instance (never run), exception_info from
`ExceptionInfo.from_exception` on Harbor's, asyncio's or LiteLLM's own exception classes.
The started_at of the trial is --started-at (its end is 80 s later), except where the
shape says otherwise. Every file is reloaded through its model and must round-trip.

Shapes (`shapes` lists them, one per line):
  pass                      the case as launched: checksum, config, window, reward 1.0
  checksum-mismatch         another task version: task_checksum is not --checksum
  other-model               the embedded config ran another model without the daemon's api_base
  early-timestamps          started_at 90 days before --started-at
  job-retries               a job directory whose config, lock and result show one Harbor retry
  multi-key-reward          reward.json with several keys and no `reward`
  integer-reward            reward.json {"reward": 1}: ints stay ints
  cancelled                 CancelledError, no verifier
  nonzero-exit-with-reward  NonZeroAgentExitCodeError, and the verifier ran: reward 1.0
  null-agent-result         agent_result present with every field null, RuntimeError
  credential-in-exception   an exception message that quotes a credential
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from uuid import UUID

if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harbor.agents.factory import AgentFactory  # noqa: E402
from harbor.agents.installed.base import NonZeroAgentExitCodeError  # noqa: E402
from harbor.models.agent.context import AgentContext  # noqa: E402
from harbor.models.job.config import JobConfig, RetryConfig  # noqa: E402
from harbor.models.job.lock import HarborLockInfo, JobLock  # noqa: E402
from harbor.models.job.result import JobResult, JobStats  # noqa: E402
from harbor.models.task.config import VerifierEnvironmentMode  # noqa: E402
from harbor.models.trial.config import TaskConfig, TrialConfig  # noqa: E402
from harbor.models.trial.result import ExceptionInfo, TimingInfo, TrialResult  # noqa: E402
from harbor.models.verifier.result import VerifierResult  # noqa: E402

SHAPES = [
    "pass",
    "checksum-mismatch",
    "other-model",
    "early-timestamps",
    "job-retries",
    "multi-key-reward",
    "integer-reward",
    "cancelled",
    "nonzero-exit-with-reward",
    "null-agent-result",
    "credential-in-exception",
]

# A credential shape only a test writes (an OpenAI project key's form; not a real key).
FAKE_KEY = "sk-proj-" + "Tq7Wm2Xr9Lk4Hs6Vd1Pz3Ny8Bc5Fg0Jt" * 2


def defaults() -> dict:
    """Harbor's default TrialConfig, as its model dumps it, without the fields a case
    always sets or Harbor fills per run."""
    d = json.loads(TrialConfig(task=TaskConfig(path=Path("x"))).model_dump_json())
    del d["task"]["path"]
    del d["trial_name"]
    del d["job_id"]
    return d


def exception_info(exc: BaseException, at: datetime) -> ExceptionInfo:
    try:
        raise exc
    except BaseException as e:  # noqa: BLE001 - Harbor's own capture
        info = ExceptionInfo.from_exception(e)
    info.exception_traceback = re.sub(r'File "[^"]*/', 'File "/opt/gen/', info.exception_traceback)
    info.occurred_at = at
    return info


def agent_info(cfg: TrialConfig):
    with tempfile.TemporaryDirectory() as logs:
        agent = AgentFactory.create_agent_from_config(cfg.agent, logs_dir=Path(logs))
        return agent.to_agent_info()


def usage() -> AgentContext:
    return AgentContext(n_input_tokens=21034, n_cache_tokens=16384, n_output_tokens=1207,
                        cost_usd=None, rollout_details=[], metadata={"n_episodes": 6})


def ts(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(timezone.utc)


class Shape:
    """What one shape changes about the pass case."""

    def __init__(self, name: str, checksum: str, started: datetime):
        self.name = name
        self.checksum = checksum
        self.started = started
        self.rewards: dict | None = {"reward": 1.0}
        self.reward_file = ("reward.txt", "1.0\n")
        self.exception: BaseException | None = None
        self.ctx: AgentContext | None = usage()
        self.retries = 0
        {
            "checksum-mismatch": self._checksum,
            "early-timestamps": self._early,
            "job-retries": self._retries,
            "multi-key-reward": self._multi_key,
            "integer-reward": self._integer,
            "cancelled": self._cancelled,
            "nonzero-exit-with-reward": self._nonzero,
            "null-agent-result": self._null_agent,
            "credential-in-exception": self._credential,
        }.get(name, lambda: None)()

    def _checksum(self):
        self.checksum = hashlib.sha256(b"another version of the task").hexdigest()

    def _early(self):
        self.started = self.started - timedelta(days=90)

    def _retries(self):
        self.retries = 1

    def _multi_key(self):
        self.rewards = {"passed_tests": 3, "total_tests": 4}
        self.reward_file = ("reward.json", json.dumps(self.rewards))

    def _integer(self):
        self.rewards = {"reward": 1}
        self.reward_file = ("reward.json", json.dumps(self.rewards))

    def _cancelled(self):
        self.exception = asyncio.CancelledError()
        self.rewards = None

    def _nonzero(self):
        # NonZeroAgentExitCodeError still runs the verifier (harbor-formats.md section 3).
        self.exception = NonZeroAgentExitCodeError("agent exited with code 137")

    def _null_agent(self):
        self.exception = RuntimeError("tmux send-keys failed: no server running on /tmp/tmux-0/default")
        self.ctx = AgentContext()
        self.rewards = None

    def _credential(self):
        import litellm

        self.exception = litellm.exceptions.AuthenticationError(
            message=f"Incorrect API key provided: {FAKE_KEY}", llm_provider="openai",
            model="qwen3-coder-30b")
        self.rewards = None


def config_of(rendered: Path, shape: str) -> TrialConfig:
    data = json.loads(rendered.read_text())
    if shape == "other-model":
        data["agent"]["model_name"] = "openai/gpt-4o"
        del data["agent"]["kwargs"]["api_base"]
    return TrialConfig.model_validate(data)


def trial_result(cfg: TrialConfig, shape: Shape, trial_dir: Path) -> TrialResult:
    s = shape.started
    finished = s + timedelta(seconds=80)
    exc = exception_info(shape.exception, s + timedelta(seconds=60)) if shape.exception else None
    verifier_ran = shape.rewards is not None
    return TrialResult(
        id=UUID(hashlib.sha256(f"{cfg.trial_name}/{shape.name}".encode()).hexdigest()[:32]),
        task_name=cfg.task.path.name if cfg.task.path else cfg.task.name,
        trial_name=cfg.trial_name,
        trial_uri=trial_dir.resolve().as_uri(),
        task_id=cfg.task.get_task_id(),
        source=cfg.task.source,
        task_checksum=shape.checksum,
        config=cfg,
        agent_info=agent_info(cfg),
        agent_result=shape.ctx,
        verifier_result=VerifierResult(rewards=shape.rewards) if verifier_ran else None,
        verifier_environment_mode=VerifierEnvironmentMode.SHARED,
        exception_info=exc,
        started_at=s,
        finished_at=finished,
        environment_setup=TimingInfo(started_at=s + timedelta(seconds=1), finished_at=s + timedelta(seconds=20)),
        agent_setup=TimingInfo(started_at=s + timedelta(seconds=21), finished_at=s + timedelta(seconds=23)),
        agent_execution=TimingInfo(started_at=s + timedelta(seconds=24), finished_at=s + timedelta(seconds=60)),
        verifier=TimingInfo(started_at=s + timedelta(seconds=61), finished_at=finished) if verifier_ran else None,
    )


def dump(model, path: Path, **kw) -> None:
    text = model.model_dump_json(indent=4, **kw)
    back = type(model).model_validate_json(text)
    if back.model_dump_json(indent=4, **kw) != text:
        raise SystemExit(f"round trip changed {path}")
    path.write_text(text)


def job_files(job_dir: Path, cfg: TrialConfig, result: TrialResult, retries: int) -> None:
    """The job-level config.json, lock.json and result.json of a one-trial job."""
    job_cfg = JobConfig(job_name=job_dir.name, jobs_dir=job_dir.parent,
                        retry=RetryConfig(max_retries=retries), agents=[cfg.agent],
                        environment=cfg.environment, tasks=[cfg.task])
    dump(job_cfg, job_dir / "config.json", exclude_defaults=True)
    lock = JobLock(created_at=result.started_at, harbor=HarborLockInfo(version="0.25.0"),
                   n_concurrent_trials=1, retry=job_cfg.retry)
    dump(lock, job_dir / "lock.json")
    stats = JobStats.from_trial_results([result], n_total_trials=1, n_retries=retries)
    naive = result.started_at.replace(tzinfo=None)
    job = JobResult(id=UUID(int=7), started_at=naive, updated_at=naive, finished_at=naive,
                    n_total_trials=1, stats=stats)
    dump(job, job_dir / "result.json", exclude={"trial_results"})


def write(args) -> int:
    cfg = config_of(args.config, args.shape)
    shape = Shape(args.shape, args.checksum, ts(args.started_at))
    job_dir = args.jobs / Path(str(cfg.trials_dir)).name
    trial_dir = job_dir / cfg.trial_name
    (trial_dir / "verifier").mkdir(parents=True, exist_ok=True)
    dump(cfg, trial_dir / "config.json", exclude_defaults=True)
    result = trial_result(cfg, shape, trial_dir)
    dump(result, trial_dir / "result.json")
    (trial_dir / "trial.log").write_text(f"trial {cfg.trial_name}: shape {args.shape}\n")
    if shape.rewards is not None:
        name, text = shape.reward_file
        (trial_dir / "verifier" / name).write_text(text)
    if args.shape == "job-retries":
        job_files(job_dir, cfg, result, shape.retries)
    print(trial_dir)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("defaults")
    d.add_argument("out", type=Path)
    sub.add_parser("shapes")
    w = sub.add_parser("write")
    w.add_argument("--config", type=Path, required=True)
    w.add_argument("--checksum", required=True)
    w.add_argument("--started-at", required=True)
    w.add_argument("--shape", choices=SHAPES, required=True)
    w.add_argument("--jobs", type=Path, required=True)
    args = ap.parse_args()
    if args.cmd == "defaults":
        args.out.write_text(json.dumps(defaults(), indent=2, sort_keys=True) + "\n")
        return 0
    if args.cmd == "shapes":
        print("\n".join(SHAPES))
        return 0
    return write(args)


if __name__ == "__main__":
    sys.exit(main())
