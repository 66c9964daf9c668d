"""Start N local desktop envs (the `local` env provider, tests, `make demo`, `cua-rollout up`).

Each env gets its own free X display and its own home under `root_dir/env-{i}/home`; its log is
`root_dir/env-{i}/server.log`.

Sandboxed (when root and bubblewrap can make namespaces here; see `sandbox`): each env runs in its
own network, mount, PID and IPC namespace as user `user`, its server at `http://<its own
address>:5000`, `root_dir/env-{i}/home` bound at its real `/home/user`. Otherwise, only when explicitly
allowed (`sandbox=False`, or `CUA_ALLOW_UNSANDBOXED=1`): `python -m services.desktop_env` as the invoking user
on a free port of `host`, `/home/user` rewritten to the env's home (`homemap`), with one warning naming what is
not isolated. A sandbox that cannot start is never silently skipped (issue 34, point 5): model output runs as
code in the env, and unsandboxed it runs as this user, next to the runner's files and keys.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from common.polling import free_port, http_ok
from common.processes import stop_child, stop_children
from services.desktop_env import envvars, netns, sandbox
from services.desktop_env.netns import EnvNetwork
from services.desktop_env.session import display_in_use

log = logging.getLogger(__name__)

_DISPLAY_RANGE = (100, 1000)
_START_ATTEMPTS = 3
#: `1`/`true`: the launcher may fall back to unsandboxed envs when bubblewrap cannot start here (default: refuse).
ALLOW_UNSANDBOXED_ENV = "CUA_ALLOW_UNSANDBOXED"
_NOT_ISOLATED = ("desktop envs are NOT sandboxed ({reason}): they run as this user on the host's filesystem, "
                 "processes and network, so a task's `sudo`, package installs or `rm -rf /tmp/*` change this "
                 "machine and the other envs, apps' ports (Chrome 9222, VLC 8080) collide between envs, and "
                 "/home/user is emulated by rewriting paths")


def unsandboxed_allowed() -> bool:
    """True when `CUA_ALLOW_UNSANDBOXED` is `1`, `true` or `yes` (any case)."""
    return os.environ.get(ALLOW_UNSANDBOXED_ENV, "").strip().lower() in ("1", "true", "yes")


@dataclass
class _Env:
    index: int
    display: int
    process: subprocess.Popen[bytes]
    log_file: IO[bytes]
    url: str
    net: EnvNetwork | None = None


class LocalEnvLauncher:
    """Starts `count` envs of `width` x `height` pixels; stops exactly those processes.

    `base_display`: first display number to try (default: spread by pid, so concurrent launchers
    rarely collide; a taken display is skipped and a start that loses a race is retried).
    `sandbox`: True = sandboxed or RuntimeError; False = never (explicitly unsandboxed); None (default) = when
    possible, else RuntimeError naming why, unless `CUA_ALLOW_UNSANDBOXED=1` allows the unsandboxed fallback
    (with a warning). `sandbox_subnet`: private IPv4 subnet the envs'
    addresses come from (one /30 per env); `sandbox_size`: tmpfs size of each env's writable layers.
    `host`: listen address of unsandboxed envs. `shell`: the envs' desktop shell (`DESKTOP_SHELL`: "gnome" or
    "openbox"); None (default) leaves it to the caller's environment, else `shell.default_shell()`.
    Use as a context manager, or `start()` / `stop()`.
    """

    def __init__(self, count: int, root_dir: Path, base_display: int | None = None, host: str = "127.0.0.1",
                 width: int = 1920, height: int = 1080, sandbox: bool | None = None,
                 sandbox_subnet: str = netns.DEFAULT_SUBNET, sandbox_size: str = "4g",
                 shell: str | None = None) -> None:
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        slots = netns.slot_count(sandbox_subnet)  # validates the subnet
        self.sandbox_requested = sandbox
        self.sandbox_subnet, self.sandbox_size = sandbox_subnet, sandbox_size
        self.sandboxed = False  # decided by start()
        self._next_slot = (os.getpid() * 13) % slots
        self.count = count
        self.root_dir = Path(root_dir).absolute()
        self.host = host
        self.width, self.height = width, height
        self.shell = shell
        low, high = _DISPLAY_RANGE
        self._next_display = base_display if base_display is not None else low + (os.getpid() * 7) % (high - low)
        self._spawned: list[_Env] = []  # every process started, so stop() never leaks one
        self._ready: list[_Env] = []

    @property
    def urls(self) -> list[str]:
        """Base URLs of the started envs, e.g. `http://127.0.0.1:40123`."""
        return [env.url for env in self._ready]

    @property
    def displays(self) -> list[str]:
        """X displays of the started envs, e.g. `:123`, in the order of `urls`. A sandboxed env's
        display exists only inside its sandbox (its own /tmp and network namespace)."""
        return [f":{env.display}" for env in self._ready]

    def home(self, index: int) -> Path:
        """Host directory of env `index`'s home (its `/home/user`)."""
        return self.root_dir / f"env-{index}" / "home"

    @property
    def networks(self) -> list[EnvNetwork]:
        """Network (address, veth names) of each started env, in the order of `urls`; empty when
        not sandboxed."""
        return [env.net for env in self._ready if env.net is not None]

    @property
    def pids(self) -> list[int]:
        """PID of each started env's top process (the sandbox supervisor, or the server)."""
        return [env.process.pid for env in self._ready]

    def _choose_mode(self) -> None:
        reason = sandbox.unavailable_reason() if self.sandbox_requested is not False else "disabled"
        if reason is None:
            netns.check_subnet_unused(self.sandbox_subnet)
            self.sandboxed = True
            return
        if self.sandbox_requested:
            raise RuntimeError(f"sandboxed desktop envs were requested but cannot run here: {reason}")
        if self.sandbox_requested is None:
            if not unsandboxed_allowed():
                raise RuntimeError(f"desktop envs cannot be sandboxed here ({reason}) and will not run unsandboxed: "
                                   f"run as root with bubblewrap, or set {ALLOW_UNSANDBOXED_ENV}=1 to run them as "
                                   "this user on this machine (model output then runs as code next to your files)")
            log.warning(_NOT_ISOLATED.format(reason=reason))
        self.sandboxed = False

    def _free_slot(self) -> EnvNetwork:
        slots = netns.slot_count(self.sandbox_subnet)
        used = {env.net.slot for env in self._spawned if env.net is not None}
        for _ in range(slots):
            net = EnvNetwork(self._next_slot, self.sandbox_subnet)
            self._next_slot = (self._next_slot + 1) % slots
            if net.slot not in used and netns.slot_free(net) and not net.host_if_exists():
                return net
        raise RuntimeError(f"no free sandbox slot in {self.sandbox_subnet}")

    def _free_display(self) -> int:
        low, high = _DISPLAY_RANGE
        for _ in range(high - low):
            number = self._next_display
            self._next_display = low + (self._next_display + 1 - low) % (high - low)
            if not display_in_use(number):
                return number
        raise RuntimeError(f"no free X display number in {low}..{high - 1}")

    def _spawn(self, index: int) -> _Env:
        env_dir = self.root_dir / f"env-{index}"
        env_dir.mkdir(parents=True, exist_ok=True)
        display = self._free_display()
        variables = {
            **envvars.scrub(os.environ),  # the env holds no credentials
            "DESKTOP_DISPLAY": f":{display}",
            "DESKTOP_WIDTH": str(self.width),
            "DESKTOP_HEIGHT": str(self.height),
            "DESKTOP_START_XVFB": "true",
            **({"DESKTOP_SHELL": self.shell} if self.shell else {}),
        }
        net: EnvNetwork | None = None
        if self.sandboxed:
            net = self._free_slot()
            spec = sandbox.SandboxSpec(slot=net.slot, subnet=net.subnet, home=self.home(index),
                                       size=self.sandbox_size)
            variables.update({sandbox.SPEC_VAR: spec.model_dump_json(),
                              "DESKTOP_ENV_ID": f"local-{index}-{net.env_ip}"})
            argv = sandbox.supervisor_argv()
            url = f"http://{net.env_ip}:{sandbox.SERVER_PORT}"
        else:
            port = free_port(self.host)
            variables.update({"DESKTOP_HOST": self.host, "DESKTOP_PORT": str(port),
                              "DESKTOP_HOME": str(self.home(index)), "DESKTOP_ENV_ID": f"local-{index}-{port}"})
            argv = [sys.executable, "-m", "services.desktop_env"]
            url = f"http://{self.host}:{port}"
        log_file = (env_dir / "server.log").open("ab")
        process = subprocess.Popen(argv, env=variables, stdin=subprocess.DEVNULL, stdout=log_file,
                                   stderr=subprocess.STDOUT)
        env = _Env(index, display, process, log_file, url, net)
        self._spawned.append(env)
        return env

    def _wait_ready(self, env: _Env, deadline: float) -> bool:
        """Poll `/healthz` until 200 (True) or the process exits / the deadline passes (False)."""
        while time.monotonic() < deadline:
            if env.process.poll() is not None:
                return False
            if env.net is not None and not env.net.link_up():
                time.sleep(0.05)  # before the veth is up, the env's address would go out the default route
                continue
            if http_ok(f"{env.url}/healthz", timeout_s=2.0):
                return True
            time.sleep(0.1)
        return False

    def start(self, timeout_s: float = 300.0) -> list[str]:
        """Start the envs (in parallel) and poll each `/healthz`; returns their base URLs. (GNOME Shell takes
        seconds of CPU to start: several envs starting together on a few busy cores take minutes.)

        An env whose process dies while starting (display or port taken meanwhile) is retried on
        a new display and port (sandbox slot), up to 3 times. Raises: RuntimeError naming the env and its log
        when an env is not healthy before `timeout_s` seconds; everything started is stopped then.
        """
        deadline = time.monotonic() + timeout_s
        self._choose_mode()
        try:
            pending = [self._spawn(i) for i in range(self.count)]
            self._ready = [self._ready_or_retry(env, deadline) for env in pending]
        except BaseException:
            self.stop()
            raise
        log.info("started %d desktop envs: %s", self.count, ", ".join(self.urls))
        return self.urls

    def _ready_or_retry(self, env: _Env, deadline: float) -> _Env:
        for attempt in range(1, _START_ATTEMPTS + 1):
            if self._wait_ready(env, deadline):
                return env
            code = env.process.poll()
            why = "its slot was taken" if code == sandbox.EXIT_SLOT_TAKEN else \
                f"it exited with code {code}" if code is not None else "it was not healthy in time"
            self._terminate(env)
            log_path = self.root_dir / f"env-{env.index}" / "server.log"
            if time.monotonic() >= deadline or attempt == _START_ATTEMPTS:
                tail = log_path.read_text(errors="replace")[-1500:] if log_path.exists() else ""
                raise RuntimeError(f"desktop env {env.index} ({env.url}, display :{env.display}) did not become "
                                   f"healthy; log {log_path}:\n{tail}")
            log.warning("desktop env %d failed to start on :%d (%s; log %s), retrying", env.index, env.display, why,
                        log_path)
            env = self._spawn(env.index)
        raise AssertionError("unreachable")

    @staticmethod
    def _terminate(env: _Env, timeout_s: float = 15.0) -> None:
        stop_child(env.process, timeout_s)
        env.log_file.close()
        if env.net is not None:
            netns.release_leftovers(env.net)  # a supervisor killed outright could not clean up

    def stop(self) -> None:
        """SIGTERM every env process this launcher started (by PID) and wait for each; SIGKILL
        after 15 s. Idempotent."""
        envs, self._spawned, self._ready = self._spawned, [], []
        stop_children([env.process for env in envs], grace_s=15.0)  # all at once, then each waited for
        for env in envs:
            self._terminate(env)  # the process has exited: closes its log, releases its network

    def __enter__(self) -> LocalEnvLauncher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
