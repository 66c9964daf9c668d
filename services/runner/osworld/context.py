"""Per-rollout context for setup and evaluation (host-side paths, password, screen, clock)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.runner.osworld.evidence import Evidence, Replay
from services.runner.osworld.placeholders import placeholder_values


@dataclass(frozen=True)
class SetupContext:
    """What setup steps need besides the env.

    - `client_password`: replaces `{CLIENT_PASSWORD}`;
    - `screen`: `(width, height)` in pixels, for the `{SCREEN_*}` placeholders;
    - `cache_dir`: host-side URL cache / mirror for `download` (see `url_cache`), also the base of
      relative `upload_file` `local_path`s;
    - `sleep`: called with seconds (injectable so tests do not wait);
    - `work_dir`: per-rollout host directory for `execute` `stdout` / `stderr` captures (None: a
      capture request is a SetupError);
    - `until_max_attempts` / `until_interval_s`: bound of an `execute` `until` loop (OSWorld waits
      0.3 s between attempts and has no bound on an unmet condition);
    - `chromium_port`: port of Chrome DevTools on the env's host (OSWorld tasks forward 9222 -> 1337
      with socat);
    - `vlc_port`: port of VLC's HTTP interface on the env's host (OSWorld: 8080, password "password");
    - `log`: where setup commands that exited non-zero are noted (`{"phase", "step", "command",
      "returncode", "error"}`; OSWorld ignores such exits and so does the setup, but the rollout's end event
      carries them: a start state that differs from the task's intent is visible in the trajectory);
    - `phase`: `config` or `postconfig`, the steps being run (for `log`).
    """

    client_password: str
    screen: tuple[int, int]
    cache_dir: Path
    sleep: Callable[[float], None] = time.sleep
    work_dir: Path | None = None
    until_max_attempts: int = 100
    until_interval_s: float = 0.3
    chromium_port: int = 9222
    vlc_port: int = 8080
    log: list[dict[str, Any]] = field(default_factory=list)
    phase: str = "config"

    @property
    def placeholders(self) -> dict[str, str]:
        """Placeholder token -> value for this context."""
        return placeholder_values(self.client_password, self.screen)


@dataclass(frozen=True)
class EvalContext:
    """What evaluation needs besides the env.

    - `setup`: context for `postconfig` steps and command placeholders;
    - `cache_dir`: host-side URL cache (`cloud_file`) and shared files (`cache_file`);
    - `work_dir`: per-rollout host directory where `vm_file` / `cloud_file` copies land; when None,
      `evaluate()` uses a temporary directory removed when it returns;
    - `evidence`: when given, every metric call's getter states are recorded into it (rescoring);
    - `replay`: when given, metric calls take the recorded states instead of running getters, and
      `postconfig` steps are skipped (no env is touched: `cua-rollout rescore`).
    """

    setup: SetupContext
    cache_dir: Path
    work_dir: Path | None = field(default=None)
    evidence: Evidence | None = None
    replay: Replay | None = None
