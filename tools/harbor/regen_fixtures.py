#!/usr/bin/env python3
"""Regenerate Harbor 0.25.0 fixture files with Harbor's own models.

Usage (run with the venv made by tools/harbor/setup.sh):
    regen_fixtures.py OUTDIR [--compare DIR]

Writes, for a one-case Terminus 2 run on an `ec2` environment (delete=true, tags):

  trial-config.terminus2.json       TrialConfig as Harbor writes <trial_dir>/config.json
                                    (model_dump_json(indent=4, exclude_defaults=True), trial/trial.py)
  trial-config.terminus2.full.json  full TrialConfig dump (as embedded in result.json)
  trial-result.{pass,fail,exception-no-verifier,agent-timeout-with-reward}.json
                                    TrialResult as Harbor writes <trial_dir>/result.json
                                    (model_dump_json(indent=4), trial/trial.py `_finalize`)
  job-config.json / job-config.full.json
                                    JobConfig (<job_dir>/config.json uses exclude_defaults, job.py)
  job-result.json                   JobResult as Harbor writes <job_dir>/result.json
                                    (model_dump_json(indent=4, exclude={"trial_results"}), job.py)
  job-result.in-memory-with-trials.json
                                    the same JobResult with trial_results (what Job.run() returns)

Values are fixed (ids, names, timestamps), so the output is byte-for-byte reproducible.
The JobResult stats are computed the way Job.run() finishes a job: JobStats.from_trial_results,
the job's metrics (MetricFactory, default mean) and compute_pass_at_k_by_evals.
agent_info comes from a real Terminus2 instance (to_agent_info), exception_info from
ExceptionInfo.from_exception on Harbor's/LiteLLM's real exception classes.
Every file is reloaded through its model and must round-trip unchanged.

--compare DIR compares the JSON *shapes* (key paths and value types, not values) of the
files written with same-named files in DIR and prints the differences.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from uuid import UUID

# Sets (e.g. RetryConfig.exclude_exceptions) serialize in hash order: pin the seed so
# the output is reproducible. LiteLLM must not fetch its cost map from the internet.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harbor.agents.factory import AgentFactory  # noqa: E402
from harbor.metrics.factory import MetricFactory  # noqa: E402
from harbor.models.agent.context import AgentContext, ModelUsage  # noqa: E402
from harbor.models.job.config import DatasetConfig, JobConfig, RetryConfig  # noqa: E402
from harbor.models.job.result import JobResult, JobStats  # noqa: E402
from harbor.models.metric.config import MetricConfig  # noqa: E402
from harbor.models.task.config import VerifierEnvironmentMode  # noqa: E402
from harbor.models.trial.config import (  # noqa: E402
    AgentConfig,
    EnvironmentConfig,
    TaskConfig,
    TrialConfig,
)
from harbor.models.trial.result import ExceptionInfo, TimingInfo, TrialResult  # noqa: E402
from harbor.models.verifier.result import VerifierResult  # noqa: E402
from harbor.trial.errors import AgentTimeoutError  # noqa: E402
from harbor.utils.pass_at_k import compute_pass_at_k_by_evals  # noqa: E402

JOB_ID = UUID("3f1c2b9e-8d4a-4e57-9a41-0c6f2d7b5e10")
JOB_NAME = "2026-03-01__12-00-00"
JOBS_DIR = Path("/srv/ledger/jobs")
TB2_GIT = "https://github.com/laude-institute/terminal-bench-2.git"
TB2_COMMIT = "69671fbaac6d67a7ef0dfec016cc38a64ef7a77c"
MODEL = "openai/qwen3-coder-30b"
ROUTER = "10.0.0.5"  # placeholder router address; it only appears in data, nothing connects to it
CHECKSUM = "9c1d0f3a6b2e4d5c8a7f1e0b3c6d9a2f5e8b1c4d7a0f3e6b9c2d5a8f1e4b7c0d"


def ts(h: int, m: int, s: float) -> datetime:
    """Trial timestamps are aware UTC (trial/trial.py `_now`)."""
    sec = int(s)
    return datetime(2026, 3, 1, h, m, sec, int(round((s - sec) * 1e6)), tzinfo=timezone.utc)


def agent_config(session_id: str) -> AgentConfig:
    return AgentConfig(
        name="terminus-2",
        model_name=MODEL,
        extra_allowed_hosts=[ROUTER],
        kwargs={
            "api_base": f"http://{ROUTER}:8080/v1",
            "session_id": session_id,
            "temperature": 0.7,
            "parser_name": "json",
            "llm_kwargs": {"timeout": 600},
            "llm_call_kwargs": {"extra_body": {"top_k": 20}},
        },
        # Sensitive env values are masked on dump ("sk-l****ret"); kwargs are never masked.
        env={"OPENAI_API_KEY": "sk-local-dummy-secret"},
    )


def ec2_environment(case: str | None = None) -> EnvironmentConfig:
    # environment.kwargs go straight to EC2Environment.__init__ (environments/factory.py
    # create_environment_from_config); region is required, ami_id is required for
    # launch_mode="ephemeral" (the default), tags are merged over Harbor's own tags.
    return EnvironmentConfig(
        type="ec2",
        delete=True,
        kwargs={
            "region": "us-east-1",
            "ami_id": "ami-0123456789abcdef0",
            "instance_type": "m5.large",
            "root_volume_size_gb": 40,
            "tags": {"benchledger:run": "run-0001", **({"benchledger:case": case} if case else {})},
        },
    )


def task(path: str) -> TaskConfig:
    return TaskConfig(path=Path(path), git_url=TB2_GIT, git_commit_id=TB2_COMMIT, source="terminal-bench")


def trial_config(task_path: str, trial_name: str, session_id: str) -> TrialConfig:
    return TrialConfig(
        task=task(task_path),
        trial_name=trial_name,
        trials_dir=JOBS_DIR / JOB_NAME,
        timeout_multiplier=2.0,
        agent=agent_config(session_id),
        environment=ec2_environment(case=task_path),
        job_id=JOB_ID,
    )


def agent_info(cfg: TrialConfig):
    """AgentInfo from a real (never run) Terminus2 instance, as Trial does."""
    with tempfile.TemporaryDirectory() as logs:
        agent = AgentFactory.create_agent_from_config(cfg.agent, logs_dir=Path(logs))
        return agent.to_agent_info()


def exception_info(exc: BaseException, at: datetime) -> ExceptionInfo:
    try:
        raise exc
    except BaseException as e:  # noqa: BLE001 - we want Harbor's own capture
        info = ExceptionInfo.from_exception(e)
    # Keep the traceback free of this machine's paths.
    info.exception_traceback = re.sub(r'File "[^"]*/', 'File "/opt/gen/', info.exception_traceback)
    info.occurred_at = at
    return info


def usage(n_in: int, n_cache: int, n_out: int, episodes: int) -> AgentContext:
    return AgentContext(
        n_input_tokens=n_in,
        n_cache_tokens=n_cache,
        n_output_tokens=n_out,
        cost_usd=None,  # unknown price for a self-hosted model
        model_usage={MODEL: ModelUsage(n_input_tokens=n_in, n_cache_tokens=n_cache, n_output_tokens=n_out)},
        rollout_details=[],
        metadata={"n_episodes": episodes, "api_request_times_msec": [812.4, 1033.9], "summarization_count": 0},
    )


def trial_result(
    *, rid: str, task_path: str, trial_name: str, session_id: str, minute0: int,
    ctx: AgentContext | None, reward: float | None, exc: ExceptionInfo | None, verifier_ran: bool,
) -> TrialResult:
    cfg = trial_config(task_path, trial_name, session_id)
    trial_dir = cfg.trials_dir / trial_name
    m = minute0
    return TrialResult(
        id=UUID(rid),
        task_name=task_path,
        trial_name=trial_name,
        trial_uri=trial_dir.as_uri(),
        task_id=cfg.task.get_task_id(),
        source=cfg.task.source,
        task_checksum=CHECKSUM,
        config=cfg,
        agent_info=agent_info(cfg),
        agent_result=ctx,
        verifier_result=VerifierResult(rewards={"reward": reward}) if reward is not None else None,
        verifier_environment_mode=VerifierEnvironmentMode.SHARED,
        exception_info=exc,
        started_at=ts(12, m, 5),
        finished_at=ts(12, m + 5, 5),
        environment_setup=TimingInfo(started_at=ts(12, m, 6), finished_at=ts(12, m, 26.5)),
        agent_setup=TimingInfo(started_at=ts(12, m, 27), finished_at=ts(12, m, 29)),
        agent_execution=TimingInfo(started_at=ts(12, m, 30), finished_at=ts(12, m + 4, 35.7)),
        verifier=TimingInfo(started_at=ts(12, m + 4, 36), finished_at=ts(12, m + 5, 1)) if verifier_ran else None,
    )


def build() -> dict[str, tuple[Any, dict[str, Any]]]:
    """name -> (model instance, model_dump_json kwargs besides indent)."""
    import litellm

    cfg = trial_config("fix-git", "fix-git__Xk3pQ9a", "ledger-case-0001")
    trials = {
        "pass": trial_result(
            rid="0b6f1a52-4c1e-4f0e-9d7b-2a8c5e3f9b11", task_path="fix-git", trial_name="fix-git__Xk3pQ9a",
            session_id="ledger-case-0001", minute0=0, ctx=usage(48213, 30112, 3921, 14), reward=1.0,
            exc=None, verifier_ran=True),
        "fail": trial_result(
            rid="5d2e7c90-1a3b-4c6d-8e9f-0a1b2c3d4e5f", task_path="regex-log", trial_name="regex-log__M2vR8sT",
            session_id="ledger-case-0002", minute0=10, ctx=usage(57333, 34208, 4532, 17), reward=0.0,
            exc=None, verifier_ran=True),
        # Any exception other than AgentTimeoutError / NonZeroAgentExitCodeError skips the verifier.
        "exception-no-verifier": trial_result(
            rid="9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d", task_path="cancel-async-tasks",
            trial_name="cancel-async-tasks__Jq7wL4e", session_id="ledger-case-0003", minute0=20,
            # Terminus2.run fills tokens/metadata in a `finally`, so a mid-run failure
            # still has (partial) usage.
            ctx=usage(9120, 4096, 733, 3), reward=None, verifier_ran=False,
            exc=exception_info(
                litellm.exceptions.APIConnectionError(
                    message="OpenAIException - Connection error.", llm_provider="openai", model="qwen3-coder-30b"),
                ts(12, 21, 44))),
        # AgentTimeoutError still runs the verifier: exception and reward together.
        "agent-timeout-with-reward": trial_result(
            rid="c4d3e2f1-0a9b-4c8d-9e7f-6a5b4c3d2e1f", task_path="build-cython-ext",
            trial_name="build-cython-ext__Pz5cN1u", session_id="ledger-case-0004", minute0=30,
            ctx=usage(61020, 40001, 5100, 22), reward=0.0, verifier_ran=True,
            exc=exception_info(AgentTimeoutError("Agent execution timed out after 1800.0 seconds"),
                               ts(12, 34, 35.7))),
    }

    job_cfg = JobConfig(
        job_name=JOB_NAME,
        jobs_dir=JOBS_DIR,
        timeout_multiplier=2.0,
        retry=RetryConfig(max_retries=2),
        metrics=[MetricConfig()],
        agents=[agent_config("ledger-case-0001")],
        environment=ec2_environment(),
        datasets=[DatasetConfig(name="terminal-bench", version="2.0",
                                task_names=["fix-git", "regex-log", "cancel-async-tasks", "build-cython-ext"])],
    )

    # Same steps as the end of Job.run() (job.py): stats, per-dataset metrics, pass@k.
    results = list(trials.values())
    stats = JobStats.from_trial_results(results, n_total_trials=len(results), n_retries=0)
    metrics = [MetricFactory.create_metric(m.type, **m.kwargs) for m in job_cfg.metrics]
    rewards: dict[str, list] = {}
    for r in results:
        key = JobStats.format_agent_evals_key(r.agent_info.name, r.agent_info.model_info.name, r.source or "adhoc")
        rewards.setdefault(key, []).append(r.verifier_result.rewards if r.verifier_result else None)
    for key, rs in rewards.items():
        stats.evals[key].metrics = [m.compute(rs) for m in metrics]
    for key, pak in compute_pass_at_k_by_evals(results).items():
        stats.evals[key].pass_at_k = pak
    # Job timestamps are naive local time (datetime.now() in job.py).
    job_result = JobResult(
        id=JOB_ID, started_at=datetime(2026, 3, 1, 12, 0, 0), updated_at=datetime(2026, 3, 1, 12, 35, 30),
        finished_at=datetime(2026, 3, 1, 12, 35, 30), n_total_trials=len(results), stats=stats,
        trial_results=results,
    )

    out: dict[str, tuple[Any, dict[str, Any]]] = {
        "trial-config.terminus2.json": (cfg, {"exclude_defaults": True}),
        "trial-config.terminus2.full.json": (cfg, {}),
        "job-config.json": (job_cfg, {"exclude_defaults": True}),
        "job-config.full.json": (job_cfg, {}),
        "job-result.json": (job_result, {"exclude": {"trial_results"}}),
        "job-result.in-memory-with-trials.json": (job_result, {}),
    }
    for name, r in trials.items():
        out[f"trial-result.{name}.json"] = (r, {})
    return out


# ---- shape comparison -------------------------------------------------------------

def _jtype(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(v)]


# Dict-valued fields keyed by data rather than by field name: compare their values only.
_DATA_KEYED = re.compile(r"(\.kwargs|\.env|\.evals|\.model_usage|\.reward_stats(\.[^.]+)?|\.exception_stats"
                         r"|\.pass_at_k|\.rewards|\.metadata|\.llm_kwargs|\.llm_call_kwargs|\.extra_body|\.tags)$")


def shape(v: Any, path: str = "$", out: dict[str, set[str]] | None = None,
          generic: bool = False) -> dict[str, set[str]]:
    """Map each key path to the set of JSON types seen there. Below a data-keyed dict
    (kwargs, env, evals, ...) every key is collapsed to `*`."""
    out = {} if out is None else out
    out.setdefault(path, set()).add(_jtype(v))
    if isinstance(v, dict):
        generic = generic or bool(_DATA_KEYED.search(path))
        for k, sub in v.items():
            shape(sub, f"{path}.*" if generic else f"{path}.{k}", out, generic)
    elif isinstance(v, list):
        for sub in v:
            shape(sub, f"{path}[]", out, generic)
    return out


def compare(outdir: Path, refdir: Path, names: list[str]) -> int:
    n_diff = 0
    for name in names:
        ref = refdir / name
        if not ref.exists():
            print(f"{name}: only in {outdir}")
            continue
        a = shape(json.loads((outdir / name).read_text()))
        b = shape(json.loads(ref.read_text()))
        lines = []
        for p in sorted(set(a) | set(b)):
            if p not in b:
                lines.append(f"  + {p}: {'|'.join(sorted(a[p]))} (only in regenerated)")
            elif p not in a:
                lines.append(f"  - {p}: {'|'.join(sorted(b[p]))} (only in reference)")
            elif a[p] != b[p]:
                lines.append(f"  ~ {p}: regenerated {'|'.join(sorted(a[p]))} vs reference {'|'.join(sorted(b[p]))}")
        n_diff += bool(lines)
        print(f"{name}: " + ("same shape" if not lines else f"{len(lines)} difference(s)"))
        print("\n".join(lines)) if lines else None
    for extra in sorted(p.name for p in refdir.glob("*.json") if p.name not in names):
        print(f"{extra}: only in {refdir} (not regenerated)")
    return n_diff


def main() -> int:
    ap = argparse.ArgumentParser(description="Regenerate Harbor 0.25.0 fixtures with Harbor's own models.")
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--compare", type=Path, metavar="DIR", help="compare JSON shapes with fixtures in DIR")
    args = ap.parse_args()

    args.outdir.mkdir(parents=True, exist_ok=True)
    files = build()
    for name, (model, kw) in files.items():
        text = model.model_dump_json(indent=4, **kw)
        # Round trip: what we wrote must load back into the same model.
        back = type(model).model_validate_json(text)
        if back.model_dump_json(indent=4, **kw) != text:
            print(f"round trip changed {name}", file=sys.stderr)
            return 1
        (args.outdir / name).write_text(text)
    print(f"wrote {len(files)} files to {args.outdir}", file=sys.stderr)
    if args.compare:
        compare(args.outdir, args.compare, list(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
