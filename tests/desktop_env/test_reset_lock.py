"""An action that arrives while `/reset` runs waits for the reset to end: it acts on the clean
desktop, and the reset never kills it half-way (issue 15: `/execute` takes the reset lock)."""

from __future__ import annotations

import threading
from pathlib import Path

from common.env_client import DesktopEnvClient
from common.polling import wait_until
from services.desktop_env.launcher import LocalEnvLauncher

#: `reset()` gives an env process this long after SIGTERM before SIGKILL (processes.stop_pids).
RESET_GRACE_S = 1.0


def test_execute_during_a_reset_waits_for_it(env: DesktopEnvClient, launcher: LocalEnvLauncher,
                                             tmp_path: Path) -> None:
    marker = tmp_path / "term"
    # A process that survives SIGTERM (noting when it came) keeps the reset busy for its grace period.
    env.execute(f"nohup sh -c \"trap 'date +%s.%N > {marker}' TERM; while :; do sleep 0.1; done\" "
                ">/dev/null 2>&1 &", shell=True)
    resetter = DesktopEnvClient(launcher.urls[0])
    reset = threading.Thread(target=resetter.reset)
    reset.start()
    try:
        wait_until(marker.is_file, 30, "the reset to signal the stubborn process")
        started = float((env.execute("date +%s.%N", shell=True).output or "0").strip())
    finally:
        reset.join(timeout=60)
        resetter.close()
    assert started - float(marker.read_text()) >= RESET_GRACE_S * 0.9, "the action ran during the reset"
