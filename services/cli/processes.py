"""Child processes of the local stack: start with logs to a file, poll health, stop by PID."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from common.polling import GiveUp, http_ok, wait_until
from common.processes import stop_child, stop_children


@dataclass
class ManagedProcess:
    """One `python -m services.<module>` child with its own environment and log file."""

    name: str
    module: str
    env: dict[str, str]
    log_path: Path
    health_url: str | None = None
    args: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> ManagedProcess:
        """Spawn the child (its own session, so Ctrl+C in the terminal reaches only the supervisor)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it open
        self.process = subprocess.Popen(
            [sys.executable, "-m", self.module, *self.args],
            env={**os.environ, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        return self

    def wait_healthy(self, timeout_s: float) -> None:
        """Poll `health_url` until 2xx. Raises: RuntimeError with the log tail if the child died or timed out."""
        if self.health_url is None:
            return
        url = self.health_url

        def ready() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise GiveUp(f"{self.name} exited with code {self.process.returncode}")
            return http_ok(url)

        try:
            wait_until(ready, timeout_s, f"{self.name} at {url}", interval_s=0.1)
        except Exception as exc:
            raise RuntimeError(f"{self.name} did not become healthy: {exc}\n--- {self.log_path} ---\n"
                               f"{self.log_tail()}") from exc

    def alive(self) -> bool:
        """True while the child runs."""
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        """Last lines of the child's log."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM the child (by PID), then SIGKILL its process group after `timeout_s` seconds.

        The group is the child's own session (`start_new_session`), so this reaches an RQ worker's
        work-horse fork and nothing else.
        """
        if self.process is not None:
            stop_child(self.process, timeout_s, kill_group=True)


def stop_all(processes: list[ManagedProcess], timeout_s: float = 10.0) -> None:
    """`ManagedProcess.stop` for several children at once (SIGTERM to all, then wait for each;
    `common.processes.stop_children`)."""
    stop_children([p.process for p in processes if p.process is not None], timeout_s, kill_group=True)
