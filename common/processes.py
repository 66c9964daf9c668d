"""Child processes this program started: stopping them (SIGTERM, a grace period, then SIGKILL), tying
a child's life to its parent's (`die_with_parent`), adopting orphans (`become_subreaper`), and looking
processes up (psutil)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess

import psutil

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PR_SET_CHILD_SUBREAPER = 36


def die_with_parent(sig: signal.Signals = signal.SIGKILL) -> None:
    """prctl(PR_SET_PDEATHSIG): the kernel sends `sig` to the caller when its parent exits (Linux).
    Raises: OSError naming the call when the kernel refuses."""
    _prctl(_PR_SET_PDEATHSIG, int(sig), "PR_SET_PDEATHSIG")


def become_subreaper() -> None:
    """prctl(PR_SET_CHILD_SUBREAPER): orphans among the caller's descendants become its children (to wait
    for), not the host's PID 1's, whose reaping can lag, or never come in a container without an init
    (Linux). Raises: OSError naming the call when the kernel refuses."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1, "PR_SET_CHILD_SUBREAPER")


def _prctl(option: int, arg: int, name: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, arg, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({name}): {os.strerror(err)}")


def stop_child(process: subprocess.Popen[bytes], grace_s: float, kill_group: bool = False) -> None:
    """SIGTERM `process` (by PID) and wait up to `grace_s` seconds, then SIGKILL and wait again.

    `kill_group=True` sends the SIGKILL to the child's process group instead (a child started with
    `start_new_session=True`, so the group holds only it and its own forks). No-op once it has exited.
    """
    if process.poll() is not None:
        return
    process.terminate()
    _wait_or_kill(process, grace_s, kill_group)


def _wait_or_kill(process: subprocess.Popen[bytes], grace_s: float, kill_group: bool) -> None:
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
    `grace_s` seconds, as `stop_child`). Each gets one SIGTERM: a second one could reach a child
    that is already exiting, after Python reset its handler, and kill it."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        _wait_or_kill(process, grace_s, kill_group)


def parent_pid(pid: int) -> int | None:
    """The parent's pid of process `pid`, or None once it is gone (or unreadable)."""
    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None


def child_pids(pid: int) -> list[int]:
    """Pids of the children of process `pid` (zombies included); [] once it is gone."""
    try:
        return [child.pid for child in psutil.Process(pid).children()]
    except psutil.Error:
        return []
