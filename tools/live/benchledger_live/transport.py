"""Where a trial's commands run.

`SandboxTransport` is the seam between the Harbor environment and the machine
that executes the trial. Everything the environment does (exec, file and
directory transfers) goes through these five operations, each of which ends
in one shell command inside the sandbox with bytes on stdin/stdout:

    start()                      make the sandbox (idempotent)
    run(cmd, cwd, env, user, timeout, stdin) -> (rc, stdout, stderr)
    stop(delete)                 kill everything in it, optionally remove it
    describe()                   non-secret facts for logs and evidence

`LocalChrootTransport` runs on this machine: a per-trial directory becomes the
root of a private mount namespace (host /usr and /etc read-only, /dev and
/proc bound, everything else the sandbox's own), held open by one `sleep`
process; every command enters it with nsenter + chroot. Terminus 2's tmux
server starts inside it and stays there.

A real EC2 run replaces only this class (e.g. an SSM `AWS-RunShellScript`
or SSH transport to the launched instance); see tools/live/README.md.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# Paths inside every sandbox that belong to the sandbox (writable, its own).
SANDBOX_DIRS = ("app", "logs/agent", "logs/verifier", "logs/artifacts", "tests", "solution",
                "tmp", "var/tmp", "root", "run", "home", "installed-agent")
# Host directories visible read-only inside the sandbox (symlinks are copied as symlinks).
HOST_RO = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "opt")
# Host pseudo-filesystems bound recursively.
HOST_RBIND = ("dev", "proc")

BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm-256color",
    "SHELL": "/bin/bash",
}


@dataclass
class RunResult:
    return_code: int
    stdout: bytes
    stderr: bytes


class SandboxTransport:
    """Interface; see module docstring."""

    async def start(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    async def run(self, command: str, *, cwd: str | None = None, env: dict[str, str] | None = None,
                  user: str | int | None = None, timeout_sec: float | None = None,
                  stdin: bytes | None = None) -> RunResult:  # pragma: no cover - interface
        raise NotImplementedError

    async def stop(self, delete: bool) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> dict:  # pragma: no cover - interface
        raise NotImplementedError


def _hold_script(root: Path) -> str:
    """The shell script of the namespace holder: mounts, then sleep forever."""
    r = shlex.quote(str(root))
    lines = ["set -e"]
    for name in HOST_RO:
        host = Path("/") / name
        if host.is_symlink() or not host.is_dir():
            continue
        lines.append(f"mount --bind /{name} {r}/{name}")
        lines.append(f"mount -o remount,bind,ro {r}/{name}")
    for name in HOST_RBIND:
        lines.append(f"mount --rbind /{name} {r}/{name}")
    lines.append("echo ready")
    lines.append("exec sleep infinity")
    return "\n".join(lines)


class LocalChrootTransport(SandboxTransport):
    def __init__(self, sandbox_dir: Path, *, default_cwd: str = "/app"):
        self.sandbox_dir = Path(sandbox_dir)
        self.root = self.sandbox_dir / "root"
        self.default_cwd = default_cwd
        self.holder_pid: int | None = None
        self._holder: subprocess.Popen | None = None

    # -- lifecycle ---------------------------------------------------------
    async def start(self) -> None:
        if self.holder_pid and _alive(self.holder_pid):
            return
        if os.geteuid() != 0:
            raise RuntimeError("LocalChrootTransport needs root (mount namespaces, chroot)")
        for tool in ("unshare", "nsenter", "chroot", "mount"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"LocalChrootTransport needs {tool} on PATH")
        self.root.mkdir(parents=True, exist_ok=True)
        for d in SANDBOX_DIRS:
            (self.root / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "tmp", 0o1777)
        os.chmod(self.root / "var/tmp", 0o1777)
        for name in HOST_RO + HOST_RBIND:
            host = Path("/") / name
            inside = self.root / name
            if host.is_symlink():
                if not inside.is_symlink():
                    inside.symlink_to(os.readlink(host))
            elif host.is_dir():
                inside.mkdir(exist_ok=True)
        # The holder owns the private mount namespace for the sandbox's life.
        self._holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", _hold_script(self.root)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        line = await asyncio.wait_for(asyncio.to_thread(self._holder.stdout.readline), timeout=20)
        if line.strip() != b"ready":
            err = self._holder.stderr.read().decode(errors="replace") if self._holder.poll() is not None else ""
            raise RuntimeError(f"sandbox namespace holder failed to start: {err.strip() or line!r}")
        self.holder_pid = self._holder.pid
        (self.sandbox_dir / "holder.pid").write_text(f"{self.holder_pid}\n")

    async def stop(self, delete: bool) -> None:
        # Every process whose root is this sandbox (tmux server, shells, tests), then the holder.
        victims = self._sandbox_pids()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in victims:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and any(_alive(p) for p in victims):
                await asyncio.sleep(0.1)
            victims = [p for p in victims if _alive(p)]
            if not victims:
                break
        if self._holder is not None:
            try:
                os.killpg(self._holder.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._holder.wait(timeout=10)
            self._holder = None
        self.holder_pid = None
        if delete and self.sandbox_dir.exists():
            # The binds live only in the (now dead) private namespace: the host
            # sees the empty mount points, so this never reaches /usr or /etc.
            shutil.rmtree(self.sandbox_dir)

    def _sandbox_pids(self) -> list[int]:
        pids = []
        me = os.getpid()
        root = str(self.root.resolve())
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                if os.readlink(f"/proc/{entry}/root") == root:
                    pids.append(int(entry))
            except OSError:
                continue
        if self.holder_pid:
            pids.append(self.holder_pid)
        return pids

    def describe(self) -> dict:
        return {"transport": "local-chroot", "sandbox_dir": str(self.sandbox_dir), "holder_pid": self.holder_pid}

    # -- commands ----------------------------------------------------------
    async def run(self, command: str, *, cwd: str | None = None, env: dict[str, str] | None = None,
                  user: str | int | None = None, timeout_sec: float | None = None,
                  stdin: bytes | None = None) -> RunResult:
        if not (self.holder_pid and _alive(self.holder_pid)):
            raise RuntimeError("sandbox is not running (start() first)")
        full_env = {**BASE_ENV, **(env or {})}
        workdir = cwd or self.default_cwd
        script = f"cd {shlex.quote(workdir)} 2>/dev/null || cd /; {command}"
        inner = ["/bin/bash", "-c", script]
        if user not in (None, "root", 0, "0"):
            inner = ["runuser", "-u", str(user), "--", *inner]
        argv = ["nsenter", "-t", str(self.holder_pid), "-m", "--", "chroot", str(self.root),
                "/usr/bin/env", "-i", *[f"{k}={v}" for k, v in full_env.items()], *inner]
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            if timeout_sec:
                out, err = await asyncio.wait_for(proc.communicate(stdin), timeout=timeout_sec)
            else:
                out, err = await proc.communicate(stdin)
        except asyncio.TimeoutError:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await proc.wait()
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
        return RunResult(proc.returncode if proc.returncode is not None else -1, out or b"", err or b"")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not alive for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
