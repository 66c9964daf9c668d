"""Run one env's server in its own sandbox, like a pod: `python -m services.desktop_env.sandbox`, as
root, with the sandbox spec as JSON in `CUA_SANDBOX_SPEC` and the server's `DESKTOP_*` settings.

What the env gets (see README "Sandboxed local envs"):
- its own network namespace with one address of a private subnet (`netns`): its server, Chrome's
  9222 and VLC's 8080 listen there, its `localhost` is its own, and two envs never collide on a port;
- its own mount namespace: a writable overlay over the host's filesystems, its own /tmp, /run, /dev,
  and a real /home/user (`sandbox_fs`): `sudo apt-get`, writes to /etc and `rm -rf` stay inside;
- its own PID namespace, whose PID 1 is the env server: `kill -9 -1` reaches only the env, and when
  the server exits the kernel ends every process of the env;
- its own host name; every desktop process runs as `user` (uid 1000) with sudo (`sandbox_user`).

Process tree: this process (host namespaces: holds the slot lock, forwards SIGTERM/SIGINT/SIGHUP,
waits, then waits for the kernel to remove the veth) -> the env server (PID 1 inside). Exit code:
the server's; 75 when the slot is taken (the launcher retries another), 70 when the sandbox could
not be built (the reason is printed to stderr).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from types import FrameType

from pydantic import BaseModel, ConfigDict

import services
from common.processes import die_with_parent
from services.desktop_env import envvars, netns, sandbox_fs, sandbox_user, syscalls
from services.desktop_env.netns import EnvNetwork

log = logging.getLogger(__name__)

SPEC_VAR = "CUA_SANDBOX_SPEC"
EXIT_SLOT_TAKEN = 75
EXIT_BUILD_FAILED = 70
SERVER_PORT = 5000  # OSWorld's VM server port: every env has its own address, so all use it
RUNTIME_DIR = Path("/run/desktop-env")
_VETH_GONE_TIMEOUT_S = 10.0


class SandboxSpec(BaseModel):
    """What the launcher asks for: env slot `slot` of `subnet`, the host directory `home` bound at
    /home/user, tmpfs `size` of the writable layers (e.g. `4g`), the password of `user`."""

    model_config = ConfigDict(extra="forbid")

    slot: int
    subnet: str = netns.DEFAULT_SUBNET
    home: Path
    size: str = "4g"
    password: str = "password"

    @property
    def net(self) -> EnvNetwork:
        """The env's network (names, addresses)."""
        return EnvNetwork(self.slot, self.subnet)

    @property
    def hostname(self) -> str:
        """The env's host name."""
        return f"cua-env-{self.slot}"


_reason_cache: list[str | None] = []


def unavailable_reason() -> str | None:
    """None when sandboxes can run here; else why not (not root, no `ip`, no overlayfs, namespaces
    refused). Probed once per process (a throw-away child tries the namespaces)."""
    if _reason_cache:
        return _reason_cache[0]
    reason: str | None = None
    filesystems = Path("/proc/filesystems").read_text() if Path("/proc/filesystems").exists() else ""
    if sys.platform != "linux":
        reason = f"sandboxes need Linux namespaces (platform is {sys.platform})"
    elif os.geteuid() != 0:
        reason = "not running as root (namespaces, overlay mounts and veth pairs need root)"
    elif not any(os.access(os.path.join(d, "ip"), os.X_OK) for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin")):
        reason = "the `ip` command (iproute2) is missing"
    elif "overlay" not in filesystems:
        reason = "the kernel has no overlay filesystem"
    else:
        reason = _probe_namespaces()
    _reason_cache.append(reason)
    return reason


def _probe_namespaces() -> str | None:
    pid = os.fork()
    if pid == 0:
        try:
            syscalls.unshare(syscalls.CLONE_NEWNS | syscalls.CLONE_NEWNET | syscalls.CLONE_NEWPID
                             | syscalls.CLONE_NEWUTS)
            os._exit(0)
        except OSError:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return None if os.waitstatus_to_exitcode(status) == 0 else "the kernel refused new namespaces (unshare)"


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


def _init(spec: SandboxSpec, stage: Path, mountinfo: str, joined_fd: int) -> None:
    """The env's PID 1 before it becomes the server: join the netns, build and enter the root, add
    the user, drop to it, exec the server. Never returns; exit 70 with the traceback on failure."""
    try:
        die_with_parent(signal.SIGKILL)
        syscalls.setns(str(spec.net.netns_path), syscalls.CLONE_NEWNET)
        os.write(joined_fd, b"j")
        os.close(joined_fd)
        syscalls.unshare(syscalls.CLONE_NEWNS | syscalls.CLONE_NEWUTS)
        syscalls.mount(None, "/", None, syscalls.MS_REC | syscalls.MS_PRIVATE)
        syscalls.sethostname(spec.hostname)
        root = sandbox_fs.build_root(stage, spec.home, spec.size, mountinfo)
        sandbox_fs.enter_root(root)
        sandbox_user.install_user(spec.password)
        sandbox_user.write_host_names(spec.hostname, spec.net.env_ip)
        project = Path(services.__file__).resolve().parent.parent
        sandbox_user.make_reachable([sys.executable, sys.prefix, sys.base_prefix, str(project)])
        sandbox_user.empty_home()
        xdg = sandbox_user.prepare_runtime_dirs(RUNTIME_DIR)
        env = server_environment(spec, xdg)
        sandbox_user.become_user()
        die_with_parent(signal.SIGKILL)  # cleared by the uid change
        os.chdir(sandbox_user.HOME)
        os.execve(sys.executable, [sys.executable, "-m", "services.desktop_env"], env)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
    os._exit(EXIT_BUILD_FAILED)


class _Supervisor:
    """The host-side process: owns the slot, starts the env's PID 1, forwards stop signals."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self.net = spec.net
        self.lock = netns.SlotLock(self.net)
        self.stage = netns.stage_dir(self.net)
        self.child: int | None = None

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.child is None:
            raise SystemExit(128 + signum)
        try:
            os.kill(self.child, signal.SIGTERM)
        except ProcessLookupError:
            pass

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        if not self.lock.acquire():
            print(f"sandbox: slot {self.spec.slot} is taken by another env", file=sys.stderr)
            return EXIT_SLOT_TAKEN
        try:
            netns.remove_stale(self.net)
            self.stage.mkdir(parents=True, exist_ok=True)
            self.spec.home.mkdir(parents=True, exist_ok=True)
            netns.create(self.net)
            return self._start_and_wait()
        finally:
            netns.forget_name(self.net)
            self._wait_veth_gone()
            try:
                self.stage.rmdir()
            except OSError:
                pass
            self.lock.release()

    def _start_and_wait(self) -> int:
        mountinfo = Path("/proc/self/mountinfo").read_text()
        joined_r, joined_w = os.pipe()
        syscalls.unshare(syscalls.CLONE_NEWPID)  # the next child is PID 1 of a new PID namespace
        pid = os.fork()
        if pid == 0:
            os.close(joined_r)
            _init(self.spec, self.stage, mountinfo, joined_w)
        self.child = pid
        os.close(joined_w)
        os.read(joined_r, 1)  # the child joined the netns (or died): its name is no longer needed
        os.close(joined_r)
        netns.forget_name(self.net)
        _, status = os.waitpid(pid, 0)
        self.child = None
        return os.waitstatus_to_exitcode(status)

    def _wait_veth_gone(self) -> None:
        deadline = time.monotonic() + _VETH_GONE_TIMEOUT_S
        while self.net.host_if_exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.net.host_if_exists():
            print(f"sandbox: veth {self.net.host_if} still exists after {_VETH_GONE_TIMEOUT_S:g} s", file=sys.stderr)


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
