"""The sandbox of an external agent program (services/runner/external.py): bubblewrap, as env actions are.

The program runs under `bwrap` (Debian package `bubblewrap`) with:
- its own PID namespace and `/proc`: the runner's processes (`/proc/<ppid>/environ`, their command lines and
  open files) do not exist for it; `--die-with-parent`: it ends with the runner's episode;
- its own user (uid/gid 1000 in a user namespace), every capability dropped, a new session (no terminal
  injection), its own IPC and host name;
- a file system of the system's read-only directories (`/usr`, `/etc`, the `/lib`s, `/opt`), the Python it runs
  with (read-only), the project's code directories (read-only: `common`, `services`, `cua_rollout`, `examples`;
  never the project root, where a `.env` of secrets may be), the directory of each absolute path on its
  command line (read-only), its own fresh `/tmp`, `/dev`, and the episode's work dir (writable: its `HOME`,
  `CUA_RESULT_FILE`). No runner file, no mounted secret (`/var/run/secrets`), no URL cache;
- its own network namespace with a loopback only: `127.0.0.1:5000` is relayed to the env pod's OSWorld server
  and `127.0.0.1:8000` to the gateway (`relay.py`, through Unix sockets in the work dir), so
  `OSWORLD_SERVER_URL` and `OPENAI_BASE_URL` point there; nothing else is reachable (Redis, the store, other
  envs, the internet). Its `OPENAI_API_KEY` is its session's own token (valid on the session's URL only).

When bubblewrap cannot build the sandbox (not installed, or namespaces refused, as in an unprivileged container),
the episode is a `setup_error` naming why, unless `RUNNER_EXTERNAL_UNSANDBOXED=1` explicitly allows running the
program without it.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from services.runner.relay import Relay, unix_to_tcp

#: Ports of the sandbox's loopback relayed to the env's server and to the gateway.
ENV_PORT, GATEWAY_PORT = 5000, 8000
#: Read-only system directories (bound when present).
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
#: The project's code directories (bound read-only when present; never the project root itself).
CODE_DIRS = ("common", "services", "cua_rollout", "examples")
ROOT = Path(__file__).resolve().parents[2]
#: The user the program runs as inside.
SANDBOX_UID = 1000


class SandboxUnavailable(RuntimeError):
    """bubblewrap cannot build the sandbox here; the message says why."""


def _port(url: str) -> tuple[str, int]:
    """(host, port) of an http(s) URL (default ports 80/443). Raises: ValueError without a host."""
    parts = urlsplit(url)
    if not parts.hostname:
        raise ValueError(f"URL {url!r} has no host")
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def read_only_dirs(argv: list[str]) -> list[Path]:
    """The directories bound read-only: system ones, the Python prefixes, the project's code, and the directory
    of every absolute path of `argv` that exists (a program's script and its siblings)."""
    dirs = [Path(d) for d in SYSTEM_DIRS]
    dirs += [Path(sys.prefix), Path(sys.base_prefix)]
    dirs += [ROOT / name for name in CODE_DIRS]
    for arg in argv:
        path = Path(arg)
        if path.is_absolute() and path.exists():
            dirs.append(path if path.is_dir() else path.parent)
    seen: list[Path] = []
    for directory in dirs:
        if directory.exists() and directory not in seen:
            seen.append(directory)
    return seen


def bwrap_argv(argv: list[str], work: Path, forwards: dict[int, Path]) -> list[str]:
    """The full command line: bwrap with the mounts and namespaces of the module docstring, running
    `sandbox_entry` (relays `forwards`: port -> Unix socket) and then `argv`. Raises: SandboxUnavailable
    without `bwrap`."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (`bwrap`, Debian package bubblewrap) is not installed")
    cmd = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--cap-drop", "ALL",
           "--die-with-parent", "--new-session", "--hostname", "external-agent",
           "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # first: the binds below may lie under /tmp
    for directory in read_only_dirs(argv):
        if directory.is_symlink():  # merged /usr: /bin -> usr/bin
            cmd += ["--symlink", str(directory.readlink()), str(directory)]
        else:
            cmd += ["--ro-bind", str(directory), str(directory)]
    cmd += ["--bind", str(work), str(work),
            "--chdir", str(work), "--setenv", "HOME", str(work), "--setenv", "TMPDIR", "/tmp"]
    cmd += [sys.executable, "-m", "services.runner.sandbox_entry"]
    for port, path in forwards.items():
        cmd += ["--forward", f"{port}={path}"]
    return [*cmd, "--", *argv]


def probe() -> None:
    """Build a throw-away sandbox running `true`. Raises: SandboxUnavailable with bwrap's own reason."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (`bwrap`, Debian package bubblewrap) is not installed")
    done = subprocess.run([bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/",
                           "--proc", "/proc", "--dev", "/dev", "true"], capture_output=True, text=True, timeout=30,
                          check=False)
    if done.returncode != 0:
        raise SandboxUnavailable(f"bubblewrap cannot build a sandbox here: {done.stderr.strip()[-500:]}")


@dataclass
class Sandbox:
    """A prepared sandbox: the command line to run, the URLs the program is to use inside."""

    argv: list[str]
    env_url: str
    base_url: str


@contextlib.contextmanager
def sandbox(argv: list[str], work: Path, env_url: str, gateway_url: str, session_path: str) -> Iterator[Sandbox]:
    """Relays from Unix sockets in `work` to the env (`env_url`) and the gateway (`gateway_url`), and the
    bwrap command line running `argv` with them; the relays stop on exit. `session_path`: the session's
    `/sessions/{id}/v1`. Raises: SandboxUnavailable (probe failed), ValueError for a URL without a host."""
    probe()
    relay_dir = work / ".relay"
    relay_dir.mkdir(mode=0o700)
    relays: list[Relay] = []
    try:
        for name, url in (("env", env_url), ("gateway", gateway_url)):
            relays.append(unix_to_tcp(relay_dir / f"{name}.sock", *_port(url)))
        forwards = {ENV_PORT: relay_dir / "env.sock", GATEWAY_PORT: relay_dir / "gateway.sock"}
        yield Sandbox(bwrap_argv(argv, work, forwards), f"http://127.0.0.1:{ENV_PORT}",
                      f"http://127.0.0.1:{GATEWAY_PORT}{session_path}")
    finally:
        for relay in relays:
            relay.stop()
