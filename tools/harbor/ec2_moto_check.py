#!/usr/bin/env python3
"""Drive Harbor 0.25.0's own EC2 environment against the moto server.

Usage (harbor venv; a moto server from tools/moto/start.sh):
    ec2_moto_check.py [--endpoint URL]        # default $BENCHLEDGER_AWS_ENDPOINT_URL

Harbor's EC2Environment (harbor/environments/ec2.py) has no endpoint option: it makes
`boto3.Session(profile_name=aws_profile, region_name=region).client("ec2", ...)`.
botocore honours AWS_ENDPOINT_URL_EC2 / AWS_ENDPOINT_URL, so this script sets
AWS_ENDPOINT_URL_EC2 and runs the AWS half of the environment lifecycle:
_launch_instance (RunInstances with Harbor's tags), _wait_for_instance_ready
(instance_running + instance_status_ok waiters), _resolve_host, and stop(delete=True)
(TerminateInstances + instance_terminated waiter). SSH/Docker steps are skipped.
Prints PASS/FAIL lines and "N passed, N failed"; exit 1 on failure.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoint", default=os.environ.get("BENCHLEDGER_AWS_ENDPOINT_URL"))
    args = ap.parse_args()
    if not args.endpoint or not args.endpoint.startswith(("http://127.", "http://localhost")):
        ap.error("need a loopback moto endpoint (--endpoint or BENCHLEDGER_AWS_ENDPOINT_URL)")

    # Only ever talk to the local emulator, with dummy credentials.
    os.environ.update(AWS_ENDPOINT_URL_EC2=args.endpoint, AWS_ACCESS_KEY_ID="testing",
                      AWS_SECRET_ACCESS_KEY="testing")
    for var in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN"):
        os.environ.pop(var, None)
    logging.disable(logging.WARNING)  # stop() warns about the skipped SSH/compose steps

    from harbor.environments.ec2 import EC2Environment
    from harbor.models.task.config import EnvironmentConfig as TaskEnvironmentConfig
    from harbor.models.trial.paths import TrialPaths

    results: list[tuple[str, bool, str]] = []

    def check(name: str, ok: bool, detail: str = "") -> None:
        results.append((name, ok, detail))
        print(f"{'PASS' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail}"))

    with tempfile.TemporaryDirectory() as tmp:
        env_dir = Path(tmp, "environment")
        env_dir.mkdir()
        (env_dir / "Dockerfile").write_text("FROM ubuntu:24.04\n")  # any definition will do
        paths = TrialPaths(trial_dir=Path(tmp, "fix-git__Xk3pQ9a"))
        paths.mkdir()
        session = "fix-git__Xk3pQ9a__env"  # Trial passes f"{trial_name}__env" (trial/trial.py)
        ec2_env = EC2Environment(
            environment_dir=env_dir, environment_name="fix-git", session_id=session,
            trial_paths=paths, task_env_config=TaskEnvironmentConfig(),
            region="us-east-1", ami_id="ami-0123456789abcdef0", instance_type="m5.large",
            root_volume_size_gb=40, tags={"benchledger:run": "ec2-check"},
        )
        kwargs = ec2_env._run_instances_kwargs()
        check("ClientToken is derived from the session id",
              kwargs["ClientToken"] == f"harbor-{session}", kwargs["ClientToken"])
        check("TagSpecifications cover instance and volume",
              [t["ResourceType"] for t in kwargs["TagSpecifications"]] == ["instance", "volume"],
              str(kwargs["TagSpecifications"]))

        async def lifecycle() -> None:
            ec2_env.instance_id = await ec2_env._launch_instance()
            await ec2_env._wait_for_instance_ready()
            await ec2_env._resolve_host()

        try:
            asyncio.run(lifecycle())
            check("launch + ready waiters + host", bool(ec2_env._host), str(ec2_env._host))
        except Exception as exc:  # noqa: BLE001
            check("launch + ready waiters + host", False, f"{type(exc).__name__}: {exc}")
            return 1

        client = ec2_env._ec2()
        iid = ec2_env.instance_id
        inst = client.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]
        tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
        want = {"Name": "harbor-fix-git-fix-git__Xk3pQ9a__env", "harbor:environment": "ec2",
                "harbor:session": session, "harbor:task": "fix-git", "benchledger:run": "ec2-check"}
        check("instance tags = Harbor defaults + user tags", tags == want, str(tags))
        vols = client.describe_volumes(Filters=[{"Name": "tag:harbor:session", "Values": [session]}])["Volumes"]
        check("root volume tagged, size from root_volume_size_gb",
              len(vols) == 1 and vols[0]["Size"] == 40, str(vols))

        ec2_env._host = None  # skip the SSH clean-up inside stop()
        asyncio.run(ec2_env.stop(delete=True))
        state = client.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"]
        check("stop(delete=True) terminates the instance", state == "terminated", state)
        vols = client.describe_volumes(Filters=[{"Name": "tag:harbor:session", "Values": [session]}])["Volumes"]
        check("root volume deleted with the instance", vols == [], str(vols))

    n_fail = sum(not ok for _, ok, _ in results)
    print(f"{len(results) - n_fail} passed, {n_fail} failed")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
