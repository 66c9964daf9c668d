"""Run one env's server in its own sandbox, like a pod: `supervisor_argv()` (`unshare --mount ...
python -m services.desktop_env.sandbox`), as root, with the sandbox spec as JSON in `CUA_SANDBOX_SPEC`
and the server's `DESKTOP_*` settings.

What the env gets (see docs/envs.md, "Sandboxed local envs"); bubblewrap (`bwrap`) makes the namespaces:
- its own network namespace with one address of a private subnet (`netns`): its server, Chrome's
  9222 and VLC's 8080 listen there, its `localhost` is its own, and two envs never collide on a port;
- its own mount namespace: a writable overlay over the host's filesystems, its own /tmp, /run, /dev,
  and a real /home/user (`sandbox_fs`): `sudo apt-get`, writes to /etc and `rm -rf` stay inside;
- its own PID namespace, whose PID 1 is bubblewrap's init: it reaps every orphan of the env, and
  when it exits the kernel ends every process of the env;
- its own host name and IPC namespace; every desktop process runs as `user` (uid 1000) with sudo
  (`sandbox_user`).

Why the env server is not bubblewrap's command: bwrap sets PR_SET_NO_NEW_PRIVS on its command (kept
by every descendant) and mounts everything nosuid, so nothing under it can ever become root, and
OSWorld's tasks run `sudo` with the user's password. So bubblewrap builds the namespaces and mounts
and holds them (its init, PID 1, with `sleep infinity` as its child), and the supervisor, once the
veth is in and setuid is allowed again on `/`, starts the server in them as `user` with util-linux's
`nsenter`, which sets no such flag. The server is thus not PID 1 (bubblewrap's init reaps orphans).

Process tree: this supervisor (host PID and network namespaces, a private mount namespace holding the
stage; holds the slot lock, forwards SIGTERM/SIGINT/SIGHUP to the server) -> `bwrap` -> its init
(PID 1 inside) -> `sleep infinity`; and this supervisor -> `nsenter` -> the env server. When the
server exits (or the env's init does: `sudo kill -9 -1` inside ends the env), bwrap is ended, the
kernel ends what is left of the env and removes its veth pair; the supervisor waits for that
and reaps bubblewrap's init itself (it is the child subreaper), so no zombie is left to the host. Exit
code: the server's; 75 when the slot is taken (the launcher retries another), 70 when the sandbox
could not be built (the reason is printed to stderr).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

import psutil
from pydantic import BaseModel, ConfigDict, field_validator

import services
from common import processes
from common.polling import DeadlineExceeded, wait_until
from services.desktop_env import envvars, netns, sandbox_fs, sandbox_user
from services.desktop_env.netns import EnvNetwork

log = logging.getLogger(__name__)

SPEC_VAR = "CUA_SANDBOX_SPEC"
EXIT_SLOT_TAKEN = 75
EXIT_BUILD_FAILED = 70
SERVER_PORT = 5000  # OSWorld's VM server port: every env has its own address, so all use it
RUNTIME_DIR = Path("/run/desktop-env")
NAMESPACES = ("--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-ipc")
#: Commands the sandbox runs, with the Debian package of each.
TOOLS = {"bwrap": "bubblewrap", "ip": "iproute2", "nsenter": "util-linux", "unshare": "util-linux",
         "mount": "mount", "chpasswd": "passwd"}
_VETH_GONE_TIMEOUT_S = 10.0
_STOP_GRACE_S = 15.0


class SandboxSpec(BaseModel):
    """What the launcher asks for: env slot `slot` of `subnet`, the host directory `home` bound at
    /home/user, tmpfs `size` of the writable layers and of /tmp (e.g. `4g`), the password of `user`."""

    model_config = ConfigDict(extra="forbid")

    slot: int
    subnet: str = netns.DEFAULT_SUBNET
    home: Path
    size: str = "4g"
    password: str = "password"

    @field_validator("size")
    @classmethod
    def _tmpfs_size(cls, size: str) -> str:
        sandbox_fs.size_bytes(size)  # ValueError naming it
        return size

    @property
    def net(self) -> EnvNetwork:
        """The env's network (names, addresses)."""
        return EnvNetwork(self.slot, self.subnet)

    @property
    def hostname(self) -> str:
        """The env's host name."""
        return f"cua-env-{self.slot}"


def supervisor_argv() -> list[str]:
    """The command that runs one sandbox (this module in a private mount namespace of its own)."""
    return ["unshare", "--mount", "--propagation", "private", sys.executable, "-m", "services.desktop_env.sandbox"]


_reason_cache: list[str | None] = []


def unavailable_reason() -> str | None:
    """None when sandboxes can run here; else why not (not root, a command missing, no overlayfs,
    bubblewrap refused the namespaces: its message). Probed once per process (a throw-away `bwrap`)."""
    if _reason_cache:
        return _reason_cache[0]
    reason: str | None = None
    filesystems = Path("/proc/filesystems").read_text() if Path("/proc/filesystems").exists() else ""
    missing = [f"`{tool}` ({package})" for tool, package in TOOLS.items() if shutil.which(tool) is None]
    if sys.platform != "linux":
        reason = f"sandboxes need Linux namespaces (platform is {sys.platform})"
    elif os.geteuid() != 0:
        reason = "not running as root (namespaces, overlay mounts and veth pairs need root)"
    elif missing:
        reason = f"missing commands: {', '.join(missing)}"
    elif "overlay" not in filesystems:
        reason = "the kernel has no overlay filesystem"
    else:
        probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "bwrap", *NAMESPACES,
                                "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
                               capture_output=True, text=True, timeout=30)
        if probe.returncode != 0:
            reason = f"bubblewrap cannot create the env's namespaces here: {probe.stderr.strip()}"
    _reason_cache.append(reason)
    return reason


def server_environment(spec: SandboxSpec, xdg_runtime: Path) -> dict[str, str]:
    """The env server's environment inside the sandbox: this process's, minus sudo's and the
    host's session variables and any credential (`envvars`), as `user`, with the sandbox's own host,
    home and runtime dirs; `/file`, `/setup/upload` and `/list_directory` may reach its whole (private)
    root."""
    dropped = ("SUDO_", "XDG_", "DBUS_", "XAUTHORITY", "MAIL", "OLDPWD")
    env = {k: v for k, v in envvars.scrub(os.environ).items() if not k.startswith(dropped) and k != SPEC_VAR}
    env.update({
        "HOME": str(sandbox_user.HOME), "USER": sandbox_user.USER, "LOGNAME": sandbox_user.USER,
        "SHELL": "/bin/bash", "PWD": str(sandbox_user.HOME),
        "DESKTOP_HOST": spec.net.env_ip, "DESKTOP_PORT": str(SERVER_PORT),
        "DESKTOP_HOME": str(sandbox_user.HOME), "DESKTOP_RUNTIME_DIR": str(RUNTIME_DIR),
        "DESKTOP_XDG_RUNTIME_DIR": str(xdg_runtime), "DESKTOP_WIPE_TMP": "true", "DESKTOP_FILE_ROOTS": "/",
        "DESKTOP_CLIENT_PASSWORD": spec.password,
    })
    return env


def bwrap_argv(spec: SandboxSpec, stage: Path, info_fd: int) -> list[str]:
    """bubblewrap's command line for the env staged under `stage`: new PID, network, UTS and IPC
    namespaces, the file system of `sandbox_fs.bwrap_mounts`, the env's host name; the PID of its
    init goes to `info_fd` (JSON `{"child-pid": N, ...}`); it dies with this process."""
    return ["bwrap", *NAMESPACES, "--hostname", spec.hostname, "--die-with-parent", "--info-fd", str(info_fd),
            *sandbox_fs.bwrap_mounts(stage, spec.home, spec.size), "--chdir", str(sandbox_user.HOME),
            "--", "sleep", "infinity"]


def nsenter_argv(env_pid: int, command: list[str], as_user: bool = False) -> list[str]:
    """`command` run in every namespace and the root of the env whose PID 1 is `env_pid` (host PID),
    in its working directory (/home/user); as `user` (uid/gid 1000, no other groups) or as root."""
    user = [f"--setuid={sandbox_user.UID}", f"--setgid={sandbox_user.GID}"] if as_user else []
    return ["nsenter", f"--target={env_pid}", "--mount", "--uts", "--ipc", "--net", "--pid", "--root", "--wd",
            *user, "--", *command]


def _read_info(fd: int) -> dict[str, int]:
    """bubblewrap's `--info-fd` JSON, read until it parses or bwrap closes the pipe ({} then)."""
    raw = b""
    with os.fdopen(fd, "rb") as pipe:
        while chunk := pipe.read1(4096):
            raw += chunk
            try:
                info: dict[str, int] = json.loads(raw)
                return info
            except ValueError:
                continue
    return {}


class _Supervisor:
    """The host-side process: owns the slot, has bubblewrap build the env, starts its server, forwards
    stop signals."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self.net = spec.net
        self.lock = netns.SlotLock(self.net)
        self.stage = netns.stage_dir(self.net)
        self.bwrap: subprocess.Popen[bytes] | None = None
        self.server: subprocess.Popen[bytes] | None = None

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        try:  # nsenter does not forward signals: its child is the server
            children = psutil.Process(self.server.pid).children() if self.server is not None else []
            for child in children:
                child.send_signal(signal.SIGTERM)
        except psutil.Error:
            children = []
        if children:
            return
        if self.bwrap is None:
            raise SystemExit(128 + signum)
        self.bwrap.terminate()  # the server is not running (yet): nothing to stop gracefully

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        processes.become_subreaper()  # bubblewrap's init, killed with it, is reaped here
        if not self.lock.acquire():
            print(f"sandbox: slot {self.spec.slot} is taken by another env", file=sys.stderr)
            return EXIT_SLOT_TAKEN
        try:
            netns.remove_stale(self.net)
            self.stage.mkdir(parents=True, exist_ok=True)
            self.spec.home.mkdir(parents=True, exist_ok=True)
            return self._start_and_wait()
        except (OSError, RuntimeError) as exc:  # the sandbox could not be built
            print(f"sandbox: cannot build env {self.spec.slot}: {exc}", file=sys.stderr)
            return EXIT_BUILD_FAILED
        finally:
            self._end_env()
            _reap_orphans()
            self._release()

    def _start_and_wait(self) -> int:
        root = sandbox_fs.build_stage(self.stage, self.spec.size, Path("/proc/self/mountinfo").read_text())
        sandbox_user.install_user(self.spec.password, root)
        sandbox_user.write_host_names(self.spec.hostname, self.net.env_ip, root)
        project = Path(services.__file__).resolve().parent.parent
        sandbox_user.make_reachable([sys.executable, sys.prefix, sys.base_prefix, str(project)], root)
        sandbox_user.empty_home(self.spec.home)
        xdg = sandbox_user.prepare_runtime_dirs(self.stage / "run", RUNTIME_DIR.name)
        info_r, info_w = os.pipe()
        self.bwrap = subprocess.Popen(bwrap_argv(self.spec, self.stage, info_w), pass_fds=(info_w,),
                                      stdin=subprocess.DEVNULL)
        os.close(info_w)
        env_pid = _read_info(info_r).get("child-pid")
        if env_pid is None:
            raise RuntimeError(f"bwrap exited ({self.bwrap.wait()}) before starting the env (its message above)")
        netns.attach(self.net, env_pid)
        self._as_root(env_pid, sandbox_fs.SUID_REMOUNT)
        try:
            self._as_root(env_pid, sandbox_fs.SYSFS_MOUNT)
        except sandbox_fs.MountError as exc:
            log.warning("sandbox: fresh sysfs failed (%s); the host's /sys stays, read-only", exc)
        command = [sys.executable, "-m", "services.desktop_env"]
        self.server = subprocess.Popen(nsenter_argv(env_pid, command, as_user=True), stdin=subprocess.DEVNULL,
                                       env=server_environment(self.spec, xdg))
        return self.server.wait()

    @staticmethod
    def _as_root(env_pid: int, mount_args: tuple[str, ...]) -> None:
        result = subprocess.run(nsenter_argv(env_pid, ["mount", *mount_args]), capture_output=True, text=True,
                                timeout=30)
        if result.returncode != 0:
            raise sandbox_fs.MountError(f"`mount {' '.join(mount_args)}` in the env failed ({result.returncode}): "
                                        f"{result.stderr.strip()}")

    def _end_env(self) -> None:
        """End bwrap (its init gets SIGKILL, so the kernel ends every process of the env), wait for it
        and for the server's nsenter."""
        for process in (self.bwrap, self.server):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=_STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def _release(self) -> None:
        subprocess.run(["umount", "--lazy", str(self.stage)], capture_output=True, timeout=30)
        try:
            self.stage.rmdir()
        except OSError:
            pass
        try:
            wait_until(lambda: not self.net.host_if_exists(), _VETH_GONE_TIMEOUT_S, f"veth {self.net.host_if} gone",
                       interval_s=0.02)
        except DeadlineExceeded:
            print(f"sandbox: veth {self.net.host_if} still exists after {_VETH_GONE_TIMEOUT_S:g} s", file=sys.stderr)
        self.lock.release()


def _reap_orphans() -> None:
    """Wait for (and so reap) every child left, bubblewrap's orphaned init among them (this process is the
    child subreaper), up to `_STOP_GRACE_S`; SIGKILL the ones still running then."""
    _, alive = psutil.wait_procs(psutil.Process().children(), timeout=_STOP_GRACE_S)
    for child in alive:
        child.kill()
    psutil.wait_procs(alive, timeout=_STOP_GRACE_S)


def main() -> None:
    """Entry point (see module doc). Exit code 2 when the spec is missing or invalid."""
    raw = os.environ.get(SPEC_VAR)
    if not raw:
        print(f"sandbox: {SPEC_VAR} (JSON sandbox spec) is not set", file=sys.stderr)
        sys.exit(2)
    spec = SandboxSpec.model_validate_json(raw)
    reason = unavailable_reason()
    if reason is not None:
        print(f"sandbox: cannot sandbox here: {reason}", file=sys.stderr)
        sys.exit(EXIT_BUILD_FAILED)
    sys.exit(_Supervisor(spec).run())


if __name__ == "__main__":
    main()
