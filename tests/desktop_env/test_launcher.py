"""LocalEnvLauncher (services/desktop_env/launcher.py): an env whose first process dies while starting is started
again, and the warning says why (a taken sandbox slot, an exit code, or no health in time)."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from common.polling import http_ok
from services.desktop_env import launcher as launcher_module
from services.desktop_env import sandbox
from services.desktop_env.launcher import LocalEnvLauncher


@pytest.mark.parametrize(("code", "why"), [(sandbox.EXIT_SLOT_TAKEN, "its slot was taken"),
                                           (3, "it exited with code 3")])
def test_an_env_that_dies_starting_is_started_again_and_the_warning_says_why(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, code: int, why: str) -> None:
    launcher = LocalEnvLauncher(count=1, root_dir=tmp_path, sandbox=False, shell="openbox")
    real_spawn = launcher._spawn

    def first_dies(index: int) -> launcher_module._Env:  # a process that exits as a failed env would
        monkeypatch.setattr(launcher, "_spawn", real_spawn)  # the retry gets a real env
        dying = subprocess.Popen([sys.executable, "-c", f"raise SystemExit({code})"])
        return launcher_module._Env(index, 0, dying, (tmp_path / "first.log").open("ab"), "http://127.0.0.1:9")

    monkeypatch.setattr(launcher, "_spawn", first_dies)
    caplog.set_level(logging.WARNING, logger=launcher_module.__name__)
    with launcher:
        (url,) = launcher.urls
        assert http_ok(f"{url}/healthz", timeout_s=5.0)
    [warning] = [r.getMessage() for r in caplog.records if "failed to start" in r.getMessage()]
    assert why in warning and "server.log" in warning, warning
