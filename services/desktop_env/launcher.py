"""Start N local desktop envs as `python -m services.desktop_env` subprocesses (the `local` env
provider, tests, `make demo`). Each env gets its own free port, its own free X display and its own
home under `root_dir/env-{i}/home`; its log is `root_dir/env-{i}/server.log`.
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
from common.processes import stop_child
from services.desktop_env.session import display_in_use

log = logging.getLogger(__name__)

_DISPLAY_RANGE = (100, 1000)
_START_ATTEMPTS = 3


@dataclass
class _Env:
    index: int
    display: int
    port: int
    process: subprocess.Popen[bytes]
    log_file: IO[bytes]
    url: str


class LocalEnvLauncher:
    """Starts `count` envs of `width` x `height` pixels on `host`; stops exactly those processes.

    `base_display`: first display number to try (default: spread by pid, so concurrent launchers
    rarely collide; a taken display is skipped and a start that loses a race is retried). Use as a
    context manager, or call `start()` / `stop()`.
    """

    def __init__(self, count: int, root_dir: Path, base_display: int | None = None, host: str = "127.0.0.1",
                 width: int = 1920, height: int = 1080) -> None:
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        self.count = count
        self.root_dir = Path(root_dir).absolute()
        self.host = host
        self.width, self.height = width, height
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
        """X displays of the started envs, e.g. `:123`, in the order of `urls`."""
        return [f":{env.display}" for env in self._ready]

    def home(self, index: int) -> Path:
        """Home directory of env `index` (what `/home/user` maps to there)."""
        return self.root_dir / f"env-{index}" / "home"

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
        display, port = self._free_display(), free_port(self.host)
        variables = {
            **os.environ,
            "DESKTOP_HOST": self.host,
            "DESKTOP_PORT": str(port),
            "DESKTOP_DISPLAY": f":{display}",
            "DESKTOP_WIDTH": str(self.width),
            "DESKTOP_HEIGHT": str(self.height),
            "DESKTOP_HOME": str(self.home(index)),
            "DESKTOP_START_XVFB": "true",
            "DESKTOP_ENV_ID": f"local-{index}-{port}",
        }
        log_file = (env_dir / "server.log").open("ab")
        process = subprocess.Popen([sys.executable, "-m", "services.desktop_env"], env=variables,
                                   stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT)
        env = _Env(index, display, port, process, log_file, f"http://{self.host}:{port}")
        self._spawned.append(env)
        return env

    def _wait_ready(self, env: _Env, deadline: float) -> bool:
        """Poll `/healthz` until 200 (True) or the process exits / the deadline passes (False)."""
        while time.monotonic() < deadline:
            if env.process.poll() is not None:
                return False
            if http_ok(f"{env.url}/healthz", timeout_s=2.0):
                return True
            time.sleep(0.1)
        return False

    def start(self, timeout_s: float = 60.0) -> list[str]:
        """Start the envs (in parallel) and poll each `/healthz`; returns their base URLs.

        An env whose process dies while starting (display or port taken meanwhile) is retried on
        a new display and port, up to 3 times. Raises: RuntimeError naming the env and its log
        when an env is not healthy before `timeout_s` seconds; everything started is stopped then.
        """
        deadline = time.monotonic() + timeout_s
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
            self._terminate(env)
            log_path = self.root_dir / f"env-{env.index}" / "server.log"
            if time.monotonic() >= deadline or attempt == _START_ATTEMPTS:
                tail = log_path.read_text(errors="replace")[-1500:] if log_path.exists() else ""
                raise RuntimeError(f"desktop env {env.index} ({env.url}, display :{env.display}) did not become "
                                   f"healthy; log {log_path}:\n{tail}")
            log.warning("desktop env %d failed to start on :%d, retrying", env.index, env.display)
            env = self._spawn(env.index)
        raise AssertionError("unreachable")

    @staticmethod
    def _terminate(env: _Env, timeout_s: float = 15.0) -> None:
        stop_child(env.process, timeout_s)
        env.log_file.close()

    def stop(self) -> None:
        """SIGTERM every env process this launcher started (by PID) and wait for each; SIGKILL
        after 15 s. Idempotent."""
        envs, self._spawned, self._ready = self._spawned, [], []
        for env in envs:
            if env.process.poll() is None:
                env.process.terminate()
        for env in envs:
            self._terminate(env)

    def __enter__(self) -> LocalEnvLauncher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
