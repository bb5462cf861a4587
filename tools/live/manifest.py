#!/usr/bin/env python3
"""Write the manifest pair of a live loopback lineage, with real values.

    tools/.venv-live/bin/python tools/live/manifest.py --run-dir DIR [--lineage LABEL] [--bro PATH]

(`bash tools/live/setup.sh` makes tools/.venv-live: Python 3.12 + blake3.)
Writes into DIR (nothing outside it):

  manifest.toml, manifest.private.toml   manifest_version = 2, lineage LABEL (default
                                         live-<UTC time>): a MECHANISM iteration
                                         (canary-1, control, r1, r2) over the 8 scored
                                         tasks of tools/live/tasks (hello-file is the
                                         canary, one identity per slot), one trial
                                         each, at BENCHLEDGER_LIVE_CONCURRENCY (4), each
                                         loopback sandbox kept for at least
                                         BENCHLEDGER_LIVE_MIN_INSTANCE_LIFE_SEC
  groups/<group>/bitrouter.yaml          the group's daemon config (from
                                         group-bitrouter.yaml.in) and its policy lock
  groups/<group>/policy-lock.yaml        (r1/r2: every request to economy; canary-1:
                                         to the hosted balanced route; control: none)
  aws/config, aws/credentials            the named profile of [aws] (static dummy keys
                                         for moto; the CLI reads AWS_CONFIG_FILE /
                                         AWS_SHARED_CREDENTIALS_FILE)
  live.json                              ports, paths and URLs for up.sh, daemon.sh and
                                         lineage.sh

Real values: each task's content_sha256 is Harbor 0.25.0's own `Task(dir).checksum`
(tools/.venv-harbor), the binary's and every config's SHA-256 are of the files, the
validator's BLAKE3 is of tools/harbor/validate_trial_config.py, the ports are free
127.0.0.1 ports chosen now (moto, the stand-in provider, the preflight daemon and one
per group). Paths in the manifest are absolute (the run directory's); nothing of this
machine goes into the repository.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import blake3

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TASKS_DIR = HERE / "tasks"
HARBOR_PY = REPO / "tools" / ".venv-harbor" / "bin" / "python"
VALIDATOR = "tools/harbor/validate_trial_config.py"
LAUNCH = "tools/live/launch.py"  # the frozen launch: one trial, then its outcome rows

CANARY_TASK = "hello-file"
# The lineage's concurrency. c > 1 needs an accepted canary of c cases that
# ran at exactly c with an observed peak of c (GATE-9): canary-1 has
# CONCURRENCY identities of the canary task, launched together.
CONCURRENCY = int(os.environ.get("BENCHLEDGER_LIVE_CONCURRENCY", "4"))
# The loopback sandbox's minimum life (environment kwarg
# `min_instance_life_sec`, frozen in [launch.environment_kwargs]): a loopback
# trial's moto instance lives a few seconds, a real one 5-30 minutes; with
# c > 1 each instance is kept until it has lived this long, so that c
# trials launched together are alive at once for several of `run`'s cleanup
# monitor samples (tools/live/README.md, "Design of the lineage"). At c = 1
# nothing needs to overlap: 0.
MIN_INSTANCE_LIFE_SEC = int(os.environ.get("BENCHLEDGER_LIVE_MIN_INSTANCE_LIFE_SEC",
                                           "45" if CONCURRENCY > 1 else "0"))
SCORED_TASKS = ["json-config", "fizzbuzz-script", "sorted-words", "sum-numbers",
                "greet-script", "python-square", "uppercase-files", "word-count"]
GROUPS = ["canary-1", "control", "r1", "r2"]
# What each group's daemon routes `@auto` to (its policy lock); control asks
# for the strong route's model directly and has no policy.
GROUP_POLICY = {"canary-1": "balanced", "control": None, "r1": "economy", "r2": "economy"}
ROUTES = {  # tier: (manifest provider, model, the bro provider serving it)
    "strong": ("anthropic", "claude-sonnet-4-5", "anthropic"),
    "balanced": ("ambient", "moonshotai/kimi-k2.7-code", "bitrouter"),
    "economy": ("ambient", "qwen/qwen3-coder-30b", "ambient"),
}
# The example signer keys (benchledger's testkit::examples::signer, derived
# from public text; ledger-schema/examples/manifest.toml lists them).
OPERATOR_KEY = "alice+20066cb8+Ac/DLDg8XjMPCq9XnP+FZjfVEbQNvcB6M1EpGVpzL+8v"
REVIEWER_KEY = "bob+66ac496e+Af9+5jMV0yE8gBeMrOZSqUUpDLJ5PhuVKbk+izAeszcM"
MOTO_ACCOUNT = "123456789012"
MOTO_PRINCIPAL = f"arn:aws:sts::{MOTO_ACCOUNT}:user/moto"
AWS_PROFILE = "benchledger-live"
REGION = "us-east-1"
SANDBOX_TYPE = "m5.large"  # 2 vCPU in moto
SEMANTIC_ROUTE = "semantic_route/v1|unknown|unknown|guarded"
PREDICTOR_DIGEST = "sha256:68c9512a4a2f0458c48c452c2c00b49ddc5821a6d20506f257b9ddc73818343b"


def sha256_file(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def free_ports(n: int) -> list[int]:
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            port = s.getsockname()[1]
            if port not in ports:
                ports.append(port)
    finally:
        for s in socks:
            s.close()
    return ports


def task_checksums(names: list[str]) -> dict[str, str]:
    """Harbor 0.25.0's task_checksum of each task directory, computed by Harbor."""
    code = (
        "import json, sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from harbor.models.task.task import Task\n"
        "print(json.dumps({p: Task(p).checksum for p in sys.argv[1:]}))\n"
    )
    paths = [str(TASKS_DIR / n) for n in names]
    out = subprocess.run([str(HARBOR_PY), "-c", code, *paths], check=True, capture_output=True, text=True,
                         env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    by_path = json.loads(out.stdout)
    return {n: by_path[str(TASKS_DIR / n)] for n in names}


def policy_lock(tier: str) -> str:
    """The policy lock of a policy group: every request of this run projects to
    SEMANTIC_ROUTE, which goes to `tier` (an operator certificate, static)."""
    text = (HERE / "policy-lock.yaml").read_text()
    old_route = f"      {SEMANTIC_ROUTE}: economy\n"
    old_cert = "      selected_tier: economy\n"
    assert old_route in text and old_cert in text, "policy-lock.yaml changed shape"
    return text.replace(old_route, f"      {SEMANTIC_ROUTE}: {tier}\n").replace(
        old_cert, f"      selected_tier: {tier}\n")


def routing_block(group: str) -> str:
    if GROUP_POLICY[group] is None:
        # Control names the strong route's model as the manifest has it; a
        # one-endpoint virtual model resolves it to that route only.
        provider, model, bro_provider = ROUTES["strong"]
        return ("# Control: every request resolves to the frozen strong route; no policy, no learning.\n"
                "models:\n"
                f"  {model}:\n"
                "    strategy: priority\n"
                "    endpoints:\n"
                f"      - provider: {bro_provider}\n"
                f"        service_id: {model}\n")
    return ("# `@auto` selects policy `auto` of policy-lock.yaml (beside this file).\n"
            "routers:\n"
            "  auto:\n"
            "    selection:\n"
            "      kind: policy\n"
            "      policy: auto\n"
            f"      base_model: \"anthropic:{ROUTES['strong'][1]}\"\n"
            "\n"
            "policy:\n"
            "  path: policy-lock.yaml\n"
            "  mode: frozen\n")


def preflight_routing() -> str:
    """The preflight daemon (sentinels only, not a group): each route's model by name."""
    lines = ["# Preflight (sentinels): each route's model by its manifest name.", "models:"]
    for _tier, (_p, model, bro_provider) in ROUTES.items():
        lines += [f"  {model}:", "    strategy: priority", "    endpoints:",
                  f"      - provider: {bro_provider}", f"        service_id: {model}"]
    return "\n".join(lines) + "\n"


def render_config(group: str, group_dir: Path, db_path: Path, bro_port: int, provider_port: int,
                  routing: str, lock_sha: str) -> str:
    text = (HERE / "group-bitrouter.yaml.in").read_text()
    for k, v in {"@GROUP@": group, "@GROUP_DIR@": str(group_dir), "@DB_PATH@": str(db_path),
                 "@BRO_PORT@": str(bro_port), "@PROVIDER_PORT@": str(provider_port),
                 "@POLICY_LOCK_SHA256@": lock_sha, "@ROUTING@": routing}.items():
        text = text.replace(k, v)
    body = "".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
    assert "@" not in body.replace("@auto", ""), "unrendered placeholder"
    return text


def q(s: str) -> str:
    return json.dumps(s)  # a TOML basic string is JSON-compatible for these values


def arr(xs: list[str]) -> str:
    return "[" + ", ".join(q(x) for x in xs) + "]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--lineage", help="default live-<UTC time> (a new label for every lineage, FREEZE-3)")
    ap.add_argument("--bro", default=os.environ.get("BENCHLEDGER_LIVE_BRO", str(REPO / "target/live-tools/bin/bro")))
    ap.add_argument("--max-turns", type=int, default=12)
    ap.add_argument("--operator-vkey", default=OPERATOR_KEY,
                    help="the operator's C2SP verifier key (`benchledger key generate`); default the example alice")
    ap.add_argument("--reviewer-vkey", default=REVIEWER_KEY,
                    help="the reviewer's verifier key; default the example bob")
    args = ap.parse_args()

    run = Path(args.run_dir).resolve()
    run.mkdir(parents=True, exist_ok=True)
    bro = Path(args.bro).resolve()
    if not bro.is_file():
        sys.exit(f"live/manifest: no bro binary at {bro} (tools/live/README.md, 'Build')")
    now = dt.datetime.now(dt.timezone.utc)
    lineage = args.lineage or f"live-{now.strftime('%Y%m%dt%H%M%S')}"

    moto_port, provider_port, preflight_port, *group_ports = free_ports(3 + len(GROUPS))
    ports = dict(zip(GROUPS, group_ports))
    checksums = task_checksums([CANARY_TASK, *SCORED_TASKS])

    groups = {}
    for g in GROUPS:
        gdir = run / "groups" / g
        gdir.mkdir(parents=True, exist_ok=True)
        db = run / "policy" / "policy.db" if g.startswith("r") else gdir / "bitrouter.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        tier = GROUP_POLICY[g]
        lock_sha = "none (no policy)"
        if tier is not None:
            lock = policy_lock(tier)
            (gdir / "policy-lock.yaml").write_text(lock)
            lock_sha = hashlib.sha256(lock.encode()).hexdigest()
        config = render_config(g, gdir, db, ports[g], provider_port, routing_block(g), lock_sha)
        (gdir / "bitrouter.yaml").write_text(config)
        groups[g] = {
            "dir": str(gdir), "port": ports[g], "config": str(gdir / "bitrouter.yaml"),
            "config_sha256": sha256_file(gdir / "bitrouter.yaml"), "policy_tier": tier,
            "db_path": str(db), "out_dir": str(gdir / "out"), "daemon_log": str(gdir / "daemon.log"),
            "trace_path": str(gdir / "traces.jsonl"), "decision_path": str(gdir / "decisions.jsonl"),
            "outcome_path": str(gdir / "outcomes.jsonl"), "job_name": f"{lineage}-{g}",
        }
        (gdir / "out").mkdir(exist_ok=True)
    pdir = run / "preflight"
    pdir.mkdir(exist_ok=True)
    (pdir / "bitrouter.yaml").write_text(
        render_config("preflight", pdir, pdir / "bitrouter.db", preflight_port, provider_port,
                      preflight_routing(), "none (no policy)"))

    aws = run / "aws"
    aws.mkdir(exist_ok=True)
    (aws / "config").write_text(f"[profile {AWS_PROFILE}]\nregion = {REGION}\n")
    # moto accepts any key; these are dummies that name themselves as such.
    (aws / "credentials").write_text(
        f"[{AWS_PROFILE}]\naws_access_key_id = AKIAMOTOLOCALDUMMY01\naws_secret_access_key = moto-local-dummy-secret\n")

    jobs_dir = run / "jobs"
    sandboxes = run / "sandboxes"
    jobs_dir.mkdir(exist_ok=True)
    sandboxes.mkdir(exist_ok=True)
    moto_url = f"http://127.0.0.1:{moto_port}"
    validator_blake3 = blake3.blake3((REPO / VALIDATOR).read_bytes()).hexdigest()
    bro_sha = sha256_file(bro)
    bro_version = subprocess.run([str(bro), "--version"], capture_output=True, text=True).stdout.strip()
    revision = json.loads(subprocess.run([str(bro), "build-info"], capture_output=True, text=True).stdout or "{}")
    repo_rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()

    m = []
    w = m.append
    w("# The live loopback lineage (tools/live/manifest.py): real BitRouter daemon, real Harbor")
    w("# 0.25.0 and Terminus 2 on 127.0.0.1; the stand-in provider and moto are the only")
    w(f"# simulated parties. Generated {now.strftime('%Y-%m-%dT%H:%M:%SZ')} for {bro_version}.")
    w("manifest_version = 2")
    w(f"lineage = {q(lineage)}")
    w("\n[benchmark]")
    w('name = "benchledger-live"')
    w('version = "1"')
    w('dataset_repo = "tools/live/tasks"')
    w(f"dataset_revision = {q(repo_rev or 'worktree')}")
    w("\n[run]")
    w('class = "mechanism_iteration"')
    w('role = "tuning"')
    w('hypothesis = "routing every step of 8 small shell tasks to the economy tier keeps quality within one task of control"')
    w("\n[cases]")
    w('trials = ["t1"]')
    w("tasks = [")
    for t in SCORED_TASKS:
        w(f"  {{ name = {q(t)}, content_sha256 = {q(checksums[t])} }},")
    w("]")
    w("canaries = [")
    for i in range(1, CONCURRENCY + 1):
        w(f"  {{ group = \"canary-1\", task = {q(CANARY_TASK)}, trial = \"c{i}\", content_sha256 = {q(checksums[CANARY_TASK])} }},")
    w("]")
    for g in GROUPS:
        x = groups[g]
        w("\n[[groups]]")
        w(f"name = {q(g)}")
        w(f"ports = [{x['port']}]")
        for k in ("db_path", "out_dir", "daemon_log", "trace_path", "decision_path", "outcome_path", "job_name"):
            w(f"{k} = {q(x[k])}")
    w("\n[aws]")
    w(f"profile = {q(AWS_PROFILE)}")
    w(f"region = {q(REGION)}")
    w('quota_code = "L-1216C47A"')
    w("quota_headroom_vcpu = 4")
    w("\n[central]")
    # Provisioned by `run` on moto (issue 30); tools/live/central_network.py
    # appends [central.launch] with moto's default subnet and security group
    # once the stack is up, before the freeze.
    w('mode = "provision"')
    w('ami = "ami-00000000000000000"')
    w('instance_type = "m5.xlarge"')
    w("vcpu = 4")
    w('role_tag_value = "bitrouter-central"')
    w('daemon_host = "127.0.0.1"')
    w("\n[sandbox]")
    w('ami = "ami-00000000000000000"')
    w(f"instance_type = {q(SANDBOX_TYPE)}")
    w("vcpu = 2")
    w('network = "loopback: a local chroot sandbox per trial (benchledger_live), one run-tagged moto instance per trial"')
    w("\n[tags]")
    w('run_key = "benchledger:run"')
    w(f"run_value = {q(lineage)}")
    w('role_key = "benchledger:role"')
    w('sandbox_role_value = "sandbox"')
    w('case_key = "benchledger:case"')
    w('trial_key = "benchledger:trial"')
    w("\n[software]")
    w(f"bitrouter_binary_sha256 = {q(bro_sha)}")
    w('bitrouter_arch = "x86_64"')
    w('harbor_version = "0.25.0"')
    w('terminus_version = "2.0.0"')
    w("sources = [")
    w(f"  {{ name = \"bitrouter\", repo = \"https://github.com/bitrouter/bitrouter\", commit = {q(revision.get('source_revision', 'unknown'))} }},")
    w("]")
    w("\n[software.bitrouter_config_sha256]")
    for g in GROUPS:
        w(f"{q(g)} = {q(groups[g]['config_sha256'])}")
    w("\n[harbor]")
    w("retries = 0")
    w('agent = "terminus-2"')
    w('local_api_key = "bitrouter-local"')
    w(f"jobs_dir = {q(str(jobs_dir))}")
    w("agent_timeout_sec = 300")
    w("verifier_timeout_sec = 120")
    w('accepted_exceptions = ["AgentTimeoutError"]')
    w('policy_model = "@auto"')
    w('policy_protocol = "openai"')
    for tier, (provider, model, _bro) in ROUTES.items():
        w("\n[[routes]]")
        w(f"tier = {q(tier)}")
        w(f"provider = {q(provider)}")
        w(f"model = {q(model)}")
        w('protocol = "openai"')
        w('credential_class = "api_key"')
        w(f"gate_target = {q(provider + ':' + model)}")
    prices = [("anthropic", "claude-sonnet-4-5", "3", "0.3", "3.75", "15"),
              ("ambient", "moonshotai/kimi-k2.7-code", "0.84", "0.84", "0.84", "3.99"),
              ("ambient", "qwen/qwen3-coder-30b", "0.2", None, None, "0.8")]
    for provider, model, u, cr, cw, o in prices:
        w("\n[[prices]]")
        w(f"provider = {q(provider)}")
        w(f"model = {q(model)}")
        w('credential_class = "api_key"')
        w('currency = "USD"')
        w(f"uncached_input = {q(u)}")
        if cr is not None:
            w(f"cache_read = {q(cr)}")
            w(f"cache_write = {q(cw)}")
        w(f"output = {q(o)}")
        w("cache_price_fallback = false")
        w('basis = "actual"')
        w('source = "stand-in provider price sheet (tools/live/script.json)"')
        w(f"effective_from = {q((now - dt.timedelta(days=1)).strftime('%Y-%m-%d'))}")
    w("\n[limits]")
    w(f"concurrency = {CONCURRENCY}")
    w("settlement_grace_sec = 120")
    w("reconciliation_attempts = 12")
    w("gate_freshness_sec = 1800")
    w("spend_stop_micro_usd = 50000000")
    w('severe_quality_stop_pct = "40"')
    w("\n[method]")
    w("security_skip_enabled = true")
    w('quality_tolerance_pct = "12.5"')
    w('cost_tolerance_pct = "0"')
    w("tuning_tasks = []")
    w("held_out_tasks = []")
    w("control_emits_decisions = false")
    w('interval_method = "none (one trial per case: mechanism evidence only)"')
    w("interval_seed = 0")
    w("interval_resamples = 0")
    w("\n[binding]")
    w('reward_key = "reward"')
    w('reward_min = "0"')
    w('reward_max = "1"')
    w("clock_skew_sec = 300")
    w("\n[binding.validator]")
    w(f"command = {arr(['tools/.venv-harbor/bin/python', VALIDATOR, '--strict', '--agent-options', '{config}'])}")
    w(f"program = {q(VALIDATOR)}")
    w(f"program_blake3 = {q(validator_blake3)}")
    w('harbor_version = "0.25.0"')
    w("\n[launch]")
    w(f"command = {arr(['tools/.venv-harbor/bin/python', LAUNCH, '--live', str(run / 'live.json'), '--group', '{group}', '--config', '{config}'])}")
    w("timeout_sec = 900")
    w('environment_import_path = "benchledger_live.environment:LiveSandboxEnvironment"')
    w(f"tasks_dir = {q(str(TASKS_DIR))}")
    w("\n[launch.environment_kwargs]")
    w(f"sandbox_root = {q(str(sandboxes))}")
    w('transport = "local-chroot"')
    w("launch_instance = true")
    w(f"aws_endpoint_url = {q(moto_url)}")
    w(f"region = {q(REGION)}")
    w(f"instance_type = {q(SANDBOX_TYPE)}")
    w(f"min_instance_life_sec = {MIN_INSTANCE_LIFE_SEC}")
    w("\n[launch.agent_kwargs]")
    w(f"max_turns = {args.max_turns}")
    w("suppress_max_turns_warning = true")
    w("record_terminal_session = false")
    w("\n[evidence]")
    w("usage_export = " + arr([str(bro), "workflow-state", "metering-usage", "--database-url", "sqlite://{db_path}",
                               "--output", "{out}", "--since", "{opened_at}"]))
    w("reconcile = " + arr([str(bro), "workflow-state", "reconcile-metering", "--database-url", "sqlite://{db_path}",
                            "--api-base", f"http://127.0.0.1:{provider_port}/v1", "--api-key-env", "LIVE_SETTLEMENT_API_KEY",
                            "--price", "ambient:moonshotai/kimi-k2.7-code=0.84,0.84,0.84,3.99",
                            "--max-attempts", "12", "--poll-interval-ms", "500", "--request-id", "{request_id}"]))
    w("receipt_poll_sec = 5")
    w("\n[signers]")
    w(f"operators = [{q(args.operator_vkey)}]")
    w(f"reviewers = [{q(args.reviewer_vkey)}]")
    w("witnesses = []")
    (run / "manifest.toml").write_text("\n".join(m) + "\n")

    private = [
        "# The private part of the live lineage's manifest (moto's account and principal).",
        f"lineage = {q(lineage)}",
        f"commitment_key = {q(secrets.token_hex(32))}",
        "\n[aws]",
        f"account = {q(MOTO_ACCOUNT)}",
        f"principal_arn = {q(MOTO_PRINCIPAL)}",
        "\n[secret_locations]",
        'strong = "env:LIVE_STRONG_KEY"',
        'balanced = "env:LIVE_BALANCED_KEY"',
        'economy = "env:LIVE_ECONOMY_KEY"',
    ]
    (run / "manifest.private.toml").write_text("\n".join(private) + "\n")

    live = {
        "lineage": lineage, "run_dir": str(run), "bro": str(bro), "bro_sha256": bro_sha, "bro_version": bro_version,
        "moto_port": moto_port, "moto_url": moto_url, "provider_port": provider_port,
        "provider_url": f"http://127.0.0.1:{provider_port}", "settlement_key_env": "LIVE_SETTLEMENT_API_KEY",
        "preflight": {"port": preflight_port, "dir": str(pdir), "config": str(pdir / "bitrouter.yaml"),
                      "db_path": str(pdir / "bitrouter.db")},
        "groups": groups, "jobs_dir": str(jobs_dir), "sandboxes": str(sandboxes),
        "aws_config": str(aws / "config"), "aws_credentials": str(aws / "credentials"), "aws_profile": AWS_PROFILE,
        "tasks": {"canary": {"group": "canary-1", "task": CANARY_TASK,
                            "trials": [f"c{i}" for i in range(1, CONCURRENCY + 1)]},
                  "scored": SCORED_TASKS}, "concurrency": CONCURRENCY,
        "min_instance_life_sec": MIN_INSTANCE_LIFE_SEC,
        "task_checksums": checksums, "validator_blake3": validator_blake3,
    }
    (run / "live.json").write_text(json.dumps(live, indent=2) + "\n")
    print(str(run / "manifest.toml"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
