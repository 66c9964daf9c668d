"""Find, stop and reap the processes that belong to one desktop env.

Every process an env starts (commands, launched apps, the terminal openbox spawns, apps D-Bus
activates) inherits the marker variable `CUA_DESKTOP_ENV=<env id>@<display>` in its environment,
which survives double forks and `setsid`; `/reset` stops exactly the processes carrying this env's
marker, so envs that share a machine never touch each other's processes.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
from collections.abc import Iterable

import psutil

from common import processes
from common.polling import DeadlineExceeded, wait_until

log = logging.getLogger(__name__)

MARKER_VAR = "CUA_DESKTOP_ENV"


def die_with_parent() -> None:
    """`preexec_fn` for the env's core processes (Xvfb, openbox, D-Bus): the kernel sends them
    SIGTERM when the server dies, even by SIGKILL, so they are never orphaned."""
    processes.die_with_parent(signal.SIGTERM)


def is_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (a zombie has exited but is not reaped yet)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def marked_pids(marker: str, exclude: Iterable[int] = (), cmdline_marks: Iterable[str] = ()) -> list[int]:
    """Live processes whose environment holds `CUA_DESKTOP_ENV=<marker>`, minus `exclude` and this
    process. A process whose environment we may not read (another user's, or one in a user namespace
    of its own, like Chromium's sandboxed renderers) belongs to the env when its nearest readable
    ancestor does. A process whose command line holds one of `cmdline_marks` belongs too: Chromium
    overwrites its environment block with its process titles, so its browser process is found by
    the env's own profile directory in its arguments instead."""
    marks = list(cmdline_marks)
    skip = {os.getpid(), *exclude}
    marked: dict[int, bool | None] = {}  # pid -> marker seen (None: environment unreadable)
    parents: dict[int, int] = {}
    for process in psutil.process_iter(["ppid", "environ", "cmdline", "status"], ad_value=None):
        info = process.info
        if info["status"] in (None, psutil.STATUS_ZOMBIE) or info["ppid"] is None:
            continue  # gone meanwhile, or a zombie
        parents[process.pid] = info["ppid"]
        environ = info["environ"]
        marked[process.pid] = None if environ is None else environ.get(MARKER_VAR) == marker
        if marks and not marked[process.pid] and info["cmdline"]:
            arguments = "\0".join(info["cmdline"])
            if any(mark in arguments for mark in marks):
                marked[process.pid] = True

    def belongs(pid: int) -> bool:
        seen: set[int] = set()
        while pid in marked and pid not in seen:
            if marked[pid] is not None:
                return bool(marked[pid])
            seen.add(pid)
            pid = parents[pid]
        return False

    return [pid for pid in marked if pid not in skip and belongs(pid) and is_alive(pid)]


def _signal_all(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_pids(pids: list[int], grace_s: float = 1.0) -> list[int]:
    """SIGTERM `pids`, poll up to `grace_s` seconds for them to exit, SIGKILL the rest.

    Returns the pids that were still alive after SIGKILL and another second (normally empty).
    """
    if not pids:
        return []
    _signal_all(pids, signal.SIGTERM)
    try:
        wait_until(lambda: not any(is_alive(p) for p in pids), grace_s, "processes to exit", interval_s=0.02)
        return []
    except DeadlineExceeded:
        stubborn = [p for p in pids if is_alive(p)]
    _signal_all(stubborn, signal.SIGKILL)
    try:
        wait_until(lambda: not any(is_alive(p) for p in stubborn), 1.0, "killed processes", interval_s=0.02)
        return []
    except DeadlineExceeded:
        return [p for p in stubborn if is_alive(p)]


class ChildRegistry:
    """The `subprocess.Popen` children of this server, so zombies can be reaped safely.

    Apps started detached (`/setup/launch`) are polled by `prune()`. When the server is PID 1 of a
    container, orphans are re-parented to it; `reap_orphans()` waits for those zombies, but never for
    a child that a `Popen` still owns (that would steal its exit status). Create children inside
    `spawning()` so a child can never be reaped before it is registered.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def spawning(self) -> threading.RLock:
        """Lock to hold while creating and registering a child."""
        return self._lock

    def add(self, process: subprocess.Popen[bytes]) -> None:
        """Track `process` (call inside `spawning()`)."""
        with self._lock:
            self._children[process.pid] = process

    def discard(self, process: subprocess.Popen[bytes]) -> None:
        """Stop tracking `process` once its owner has waited for it."""
        with self._lock:
            self._children.pop(process.pid, None)

    def prune(self) -> None:
        """Reap tracked children that have exited (detached apps nobody waits for)."""
        with self._lock:
            for pid, process in list(self._children.items()):
                if process.poll() is not None:
                    del self._children[pid]

    def reap_orphans(self, skip_session: int | None = None) -> int:
        """Wait for zombie children that no `Popen` owns; returns how many were reaped.

        `skip_session`: leave zombies of this session id alone (this server's own `subprocess.run`
        children share its session and are reaped by their `Popen`; orphans re-parented to a PID 1
        server come from apps started in sessions of their own).
        """
        reaped = 0
        with self._lock:
            for pid in processes.child_pids(os.getpid()):
                if pid in self._children or is_alive(pid):
                    continue
                if skip_session is not None and _session_id(pid) in (skip_session, None):
                    continue
                try:
                    os.waitpid(pid, os.WNOHANG)
                    reaped += 1
                except ChildProcessError:
                    pass
        return reaped


def _session_id(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None
