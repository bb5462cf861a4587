"""A Harbor 0.25.0 environment for the live loopback run.

Select it in a TrialConfig with

    "environment": {
      "import_path": "benchledger_live.environment:LiveSandboxEnvironment",
      "kwargs": {
        "sandbox_root": "/abs/path/sandboxes",
        "aws_endpoint_url": "http://127.0.0.1:PORT",      # moto; or "aws_profile": NAME for AWS
        "region": "us-east-1", "ami_id": "ami-...", "instance_type": "m7i.large",
        "tags": {"benchledger:run": "...", "benchledger:role": "sandbox",
                 "benchledger:case": "...", "benchledger:trial": "t1"}
      }
    }

with tools/live on PYTHONPATH. Each trial gets its own sandbox directory
(`<sandbox_root>/<session_id>`) that its commands run in (see transport.py), and
for the trial's whole life an EC2 instance carrying exactly the given tags,
launched in start() before the sandbox and terminated in stop() after it.
Commands run through a `SandboxTransport`: `LocalChrootTransport` (kwarg
`transport: "local-chroot"`, the default) or the untested `SsmTransport`
(`transport: "ssm"`, real AWS only).

`min_instance_life_sec` (loopback only, default 0): stop() keeps the sandbox
(its chroot and its moto instance) until the instance has lived at least
that long, counted from the launch call, then tears it down as before. A
real sandbox lives 5-30 minutes; a loopback trial's a few seconds, too short
for `benchledger run`'s cleanup monitor (one sample every few seconds) to see
c of them at once. The hold is part of the trial (Harbor writes the result
and the launch exits only after stop() returns), so the run-tagged instance
never outlives its case. The evidence file (`<sandbox_root>/<session>.instance.json`)
records the launch, the hold and the termination (UTC, seconds).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import io
import json
import os
import shlex
import tarfile
import tempfile
import time
from pathlib import Path, PurePosixPath

from harbor.environments.base import BaseEnvironment, ExecResult, transfer_tar_filter
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.models.task.config import TaskOS

from .ec2 import Ec2Settings, Ec2TrialInstance
from .transport import LocalChrootTransport, SandboxTransport

ENV_TYPE = "benchledger-live"


def _utc() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
DEFAULT_SANDBOX_ROOT = Path(__file__).resolve().parents[2] / ".run" / "live" / "sandboxes"


class LiveSandboxEnvironment(BaseEnvironment):
    def __init__(
        self,
        environment_dir: Path,
        environment_name: str,
        session_id: str,
        trial_paths,
        task_env_config,
        *args,
        sandbox_root: str | None = None,
        transport: str = "local-chroot",
        launch_instance: bool = True,
        aws_endpoint_url: str | None = None,
        aws_profile: str | None = None,
        region: str = "us-east-1",
        ami_id: str = "ami-12c6146b",
        instance_type: str = "m5.large",
        subnet_id: str | None = None,
        security_group_ids: list[str] | None = None,
        tags: dict[str, str] | None = None,
        keep_sandbox: bool = False,
        min_instance_life_sec: float = 0,
        **kwargs,
    ):
        root = Path(sandbox_root or os.environ.get("BENCHLEDGER_LIVE_SANDBOX_ROOT") or DEFAULT_SANDBOX_ROOT)
        if not root.is_absolute():
            raise ValueError(f"sandbox_root must be absolute: {root}")
        self._sandbox_dir = root / session_id
        self._keep_sandbox = bool(keep_sandbox)
        self._launch_instance = bool(launch_instance)
        self._tags = {str(k): str(v) for k, v in (tags or {}).items()}
        endpoint = aws_endpoint_url or (None if aws_profile else os.environ.get("BENCHLEDGER_AWS_ENDPOINT_URL"))
        if self._launch_instance and not endpoint and not aws_profile:
            raise ValueError("launch_instance needs aws_endpoint_url (moto) or aws_profile (AWS); "
                             "or set BENCHLEDGER_AWS_ENDPOINT_URL")
        if self._launch_instance and not self._tags:
            raise ValueError("launch_instance needs the run/role/case/trial tags in environment kwargs 'tags'")
        self._min_life_sec = float(min_instance_life_sec)
        if not 0 <= self._min_life_sec <= 3600:
            raise ValueError(f"min_instance_life_sec must be 0 to 3600, got {min_instance_life_sec!r}")
        if self._min_life_sec and not (self._launch_instance and endpoint and not aws_profile):
            # A real sandbox needs no help to be seen, and a hold would cost money.
            raise ValueError("min_instance_life_sec is for the loopback sandbox only "
                             "(launch_instance on moto: aws_endpoint_url, no aws_profile)")
        self._launch_t: float | None = None  # time.monotonic() at the launch call
        self._times: dict[str, object] = {}
        self._instance = Ec2TrialInstance(Ec2Settings(
            region=region, ami_id=ami_id, instance_type=instance_type, tags=self._tags,
            endpoint_url=endpoint, aws_profile=aws_profile, subnet_id=subnet_id,
            security_group_ids=list(security_group_ids or []),
            client_token=f"benchledger-{session_id}"[:64],
        ))
        workdir = getattr(task_env_config, "workdir", None) or "/app"
        if transport == "local-chroot":
            self._transport: SandboxTransport = LocalChrootTransport(self._sandbox_dir, default_cwd=workdir)
        elif transport == "ssm":
            # UNTESTED (see ssm.py): commands on the trial's own instance, real AWS only.
            if not (self._launch_instance and aws_profile and not aws_endpoint_url):
                raise ValueError("transport 'ssm' needs launch_instance, an aws_profile and no aws_endpoint_url")
            import boto3

            from .ssm import SsmTransport

            self._transport = SsmTransport(boto3.Session(profile_name=aws_profile, region_name=region),
                                           lambda: self._instance.instance_id, default_cwd=workdir)
        else:
            raise ValueError(f"unknown transport {transport!r}: 'local-chroot' or 'ssm' (untested)")
        super().__init__(environment_dir, environment_name, session_id, trial_paths, task_env_config,
                         *args, **kwargs)

    # -- identity / validation --------------------------------------------
    @staticmethod
    def type() -> str:
        return ENV_TYPE

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities()

    def _validate_definition(self):
        if self.task_env_config.os == TaskOS.WINDOWS:
            raise RuntimeError("the live sandbox runs Linux tasks only")

    @classmethod
    def preflight(cls) -> None:
        if os.geteuid() != 0:
            raise SystemExit("benchledger live sandbox needs root (mount namespace + chroot)")

    # -- lifecycle -----------------------------------------------------------
    def _evidence_path(self) -> Path:
        return self._sandbox_dir.parent / f"{self.session_id}.instance.json"

    def _write_evidence(self, **extra) -> None:
        self._sandbox_dir.parent.mkdir(parents=True, exist_ok=True)
        record = {"session_id": self.session_id, "tags": self._tags, **self._transport.describe(), **extra}
        tmp = self._evidence_path().with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        tmp.replace(self._evidence_path())

    async def start(self, force_build: bool) -> None:
        if self._launch_instance:
            self._launch_t = time.monotonic()
            self._times["launch_called_at"] = _utc()
            instance_id = await self._instance.launch()
            self._times["running_at"] = _utc()
            self._times["running_after_sec"] = round(time.monotonic() - self._launch_t, 3)
            self.logger.info(f"launched EC2 instance {instance_id} with tags {self._tags}")
        await self._transport.start()
        self._write_evidence(instance=self._instance.describe_sync() if self._launch_instance else None,
                             phase="started", times=self._times, min_instance_life_sec=self._min_life_sec)

    async def _hold(self) -> None:
        """Keep the loopback instance until it has lived `min_instance_life_sec`."""
        if not self._min_life_sec or self._launch_t is None:
            return
        left = self._min_life_sec - (time.monotonic() - self._launch_t)
        self._times["held_sec"] = round(max(left, 0.0), 3)
        if left > 0:
            self.logger.info(f"holding EC2 instance {self._instance.instance_id} {left:.1f} s more "
                             f"(min_instance_life_sec {self._min_life_sec:g})")
            await asyncio.sleep(left)

    async def stop(self, delete: bool):
        error: BaseException | None = None
        if self._launch_instance and self._instance.instance_id:
            try:
                await self._hold()  # the whole sandbox (chroot and instance) lives its minimum life
            except (Exception, asyncio.CancelledError) as exc:  # still tear it all down
                error = exc
        try:
            await self._transport.stop(delete=delete and not self._keep_sandbox)
        except Exception as exc:  # still terminate the instance
            error = error or exc
        if self._launch_instance and self._instance.instance_id:
            self._times["terminate_called_at"] = _utc()
            await self._instance.terminate()
            self._times["terminated_at"] = _utc()
            if self._launch_t is not None:
                self._times["life_sec"] = round(time.monotonic() - self._launch_t, 3)
            self.logger.info(f"terminated EC2 instance {self._instance.instance_id}")
            self._write_evidence(instance=self._instance.describe_sync(), phase="stopped",
                                 sandbox_deleted=delete and not self._keep_sandbox, times=self._times,
                                 min_instance_life_sec=self._min_life_sec)
        if error is not None:
            raise error

    # -- commands --------------------------------------------------------------
    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        result = await self._transport.run(
            command, cwd=cwd, env=self._merge_env(env), user=self._resolve_user(user),
            timeout_sec=timeout_sec,
        )
        return ExecResult(
            stdout=result.stdout.decode(errors="replace") if result.stdout else None,
            stderr=result.stderr.decode(errors="replace") if result.stderr else None,
            return_code=result.return_code,
        )

    async def _checked(self, command: str, stdin: bytes | None = None, what: str = "") -> bytes:
        result = await self._transport.run(command, cwd="/", user="root", stdin=stdin, timeout_sec=600)
        if result.return_code != 0:
            raise RuntimeError(f"{what or command} failed ({result.return_code}): "
                               f"{result.stderr.decode(errors='replace').strip()}")
        return result.stdout

    async def upload_file(self, source_path: Path | str, target_path: str):
        data = Path(source_path).read_bytes()
        target = shlex.quote(str(target_path))
        parent = shlex.quote(str(PurePosixPath(target_path).parent))
        await self._checked(f"mkdir -p {parent} && cat > {target}", stdin=data, what=f"upload {target_path}")

    async def upload_dir(self, source_dir: Path | str, target_dir: str):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for child in sorted(Path(source_dir).iterdir()):
                tf.add(child, arcname=child.name)
        target = shlex.quote(str(target_dir))
        await self._checked(f"mkdir -p {target} && tar -xf - -C {target}", stdin=buf.getvalue(),
                            what=f"upload dir {target_dir}")

    # Downloads travel base64 on stdout, so a text-only transport (SSM) carries them too.
    async def download_file(self, source_path: str, target_path: Path | str):
        data = await self._checked(f"base64 -w0 < {shlex.quote(str(source_path))}", what=f"download {source_path}")
        target = Path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(base64.b64decode(data))

    async def download_dir(self, source_dir: str, target_dir: Path | str):
        data = base64.b64decode(await self._checked(f"set -o pipefail; tar -cf - -C {shlex.quote(str(source_dir))} . | base64 -w0",
                                                    what=f"download dir {source_dir}"))
        target = Path(target_dir)
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "d.tar"
            path.write_bytes(data)
            with tarfile.open(path) as tf:
                tf.extractall(path=target, filter=transfer_tar_filter)


__all__ = ["LiveSandboxEnvironment"]
