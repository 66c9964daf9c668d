"""Stopping a child process this program started: SIGTERM, a grace period, then SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_child(process: subprocess.Popen[bytes], grace_s: float, kill_group: bool = False) -> None:
    """SIGTERM `process` (by PID) and wait up to `grace_s` seconds, then SIGKILL and wait again.

    `kill_group=True` sends the SIGKILL to the child's process group instead (a child started with
    `start_new_session=True`, so the group holds only it and its own forks). No-op once it has exited.
    """
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        try:
            if kill_group:
                os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()
        except ProcessLookupError:
            pass
        process.wait(timeout=grace_s)


def stop_children(processes: list[subprocess.Popen[bytes]], grace_s: float, kill_group: bool = False) -> None:
    """`stop_child` for several children at once: SIGTERM them all first, so their shutdowns overlap
    (the whole takes about the slowest one's time, not the sum), then wait for each (SIGKILL after
    `grace_s` seconds, as `stop_child`)."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        stop_child(process, grace_s, kill_group)
