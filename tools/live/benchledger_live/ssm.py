"""UNTESTED: the transport of a real EC2 run, over AWS Systems Manager.

This is the one class that separates the live loopback run from a real one:
it implements `SandboxTransport` by running every command on the trial's own
instance (the one `Ec2TrialInstance` launched with the run tags) through
`ssm:SendCommand` with the `AWS-RunShellScript` document, polling
`ssm:GetCommandInvocation`. It has never run: moto records SendCommand but
executes nothing, and this machine has no AWS access. See tools/live/README.md
("What could not be tested here") for what a first real run must check.

Known limits, by design of SSM (not worked around here):
- stdout/stderr come back truncated to 24,000 characters each
  (`StandardOutputContent`); a transfer larger than that needs an S3 output
  bucket (`OutputS3BucketName`), which is not implemented: `run` fails loudly
  when output looks truncated.
- stdin is not a thing in SSM: bytes for `stdin` are sent base64 inside the
  script, so uploads are limited to MAX_INLINE_STDIN bytes (above that: fail).
"""

from __future__ import annotations

import asyncio
import base64
import shlex
import time

from .transport import BASE_ENV, RunResult, SandboxTransport

MAX_INLINE_STDIN = 48 * 1024
SSM_OUTPUT_LIMIT = 24_000
TERMINAL = {"Success", "Failed", "Cancelled", "TimedOut", "Cancelling"}


class SsmTransport(SandboxTransport):
    def __init__(self, session, instance_id_fn, *, default_cwd: str = "/app", online_timeout_sec: float = 600.0,
                 poll_sec: float = 1.0):
        """`session` is a boto3 Session built from an explicit profile; `instance_id_fn`
        returns the id of the trial's instance (launched before start())."""
        self._ssm = session.client("ssm")
        self._instance_id_fn = instance_id_fn
        self.default_cwd = default_cwd
        self.online_timeout_sec = online_timeout_sec
        self.poll_sec = poll_sec

    @property
    def instance_id(self) -> str:
        iid = self._instance_id_fn()
        if not iid:
            raise RuntimeError("SsmTransport: the trial's instance is not launched")
        return iid

    async def start(self) -> None:
        # The instance must have the SSM agent registered (AMI + instance profile).
        deadline = time.monotonic() + self.online_timeout_sec
        while True:
            info = await asyncio.to_thread(
                self._ssm.describe_instance_information,
                Filters=[{"Key": "InstanceIds", "Values": [self.instance_id]}],
            )
            rows = info.get("InstanceInformationList", [])
            if rows and rows[0].get("PingStatus") == "Online":
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"SSM agent of {self.instance_id} not online within {self.online_timeout_sec}s")
            await asyncio.sleep(5)
        for d in ("/app", "/logs/agent", "/logs/verifier", "/logs/artifacts", "/tests", "/solution"):
            await self.run(f"mkdir -p {d} && chmod 777 {d}", cwd="/")

    async def stop(self, delete: bool) -> None:
        # Best effort: the instance is terminated by the environment right after.
        try:
            await self.run("tmux kill-server 2>/dev/null; true", cwd="/", timeout_sec=60)
        except Exception:
            pass

    def describe(self) -> dict:
        return {"transport": "ssm", "instance_id": self._instance_id_fn()}

    async def run(self, command: str, *, cwd: str | None = None, env: dict[str, str] | None = None,
                  user: str | int | None = None, timeout_sec: float | None = None,
                  stdin: bytes | None = None) -> RunResult:
        full_env = {**BASE_ENV, **(env or {})}
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in full_env.items())
        body = f"cd {shlex.quote(cwd or self.default_cwd)} 2>/dev/null || cd /\n{command}"
        if stdin is not None:
            if len(stdin) > MAX_INLINE_STDIN:
                raise RuntimeError(f"SsmTransport: {len(stdin)} bytes of stdin exceed the inline limit "
                                   f"{MAX_INLINE_STDIN}; an S3 transfer is not implemented")
            b64 = base64.b64encode(stdin).decode()
            body = f"echo {b64} | base64 -d | ( {body}\n)"
        if user not in (None, "root", 0, "0"):
            body = f"runuser -u {shlex.quote(str(user))} -- bash -c {shlex.quote(body)}"
        script = exports + body
        timeout = int(timeout_sec or 3600)
        sent = await asyncio.to_thread(
            self._ssm.send_command,
            InstanceIds=[self.instance_id],
            DocumentName="AWS-RunShellScript",
            Parameters={"commands": [script], "executionTimeout": [str(timeout)]},
            TimeoutSeconds=max(30, min(timeout, 2_592_000)),
        )
        command_id = sent["Command"]["CommandId"]
        deadline = time.monotonic() + timeout + 60
        while True:
            await asyncio.sleep(self.poll_sec)
            try:
                inv = await asyncio.to_thread(self._ssm.get_command_invocation,
                                              CommandId=command_id, InstanceId=self.instance_id)
            except self._ssm.exceptions.InvocationDoesNotExist:
                inv = {"Status": "Pending"}
            if inv.get("Status") in TERMINAL:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
        if inv["Status"] == "TimedOut":
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
        out = inv.get("StandardOutputContent", "") or ""
        err = inv.get("StandardErrorContent", "") or ""
        if len(out) >= SSM_OUTPUT_LIMIT or len(err) >= SSM_OUTPUT_LIMIT:
            raise RuntimeError("SsmTransport: output reached the SSM inline limit (24,000 characters); "
                               "an S3 output bucket is not implemented")
        return RunResult(int(inv.get("ResponseCode", -1)), out.encode(), err.encode())
