"""Env operations behind the OSWorld endpoints that are more than one call (directory trees: `confine`):
waiting for windows, opening files, verifying setup commands. They raise `OperationError` with
the HTTP status to answer.
"""

from __future__ import annotations

from common.polling import DeadlineExceeded, wait_until
from services.desktop_env import x11
from services.desktop_env.commands import CommandRunner
from services.desktop_env.x11 import WindowInfo


class OperationError(RuntimeError):
    """An operation failed in a way the client should hear about: `status_code` is the HTTP
    status (404 not found, 400 bad request, 500 a failure OSWorld's server also reports as 500).
    The server answers it with `schemas.ErrorReply`."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code


def wait_for_window(display: str, name: str, strict: bool, by_class: bool, timeout_s: float) -> WindowInfo:
    """The newest window matching `name` (see `x11.match_windows`), polled up to `timeout_s` seconds.

    Raises: OperationError(404) naming the window when none appears in time.
    """
    def newest_match() -> WindowInfo | None:
        matches = x11.match_windows(x11.list_windows(display), name, strict=strict, by_class=by_class)
        return matches[-1] if matches else None

    try:
        return wait_until(newest_match, timeout_s, f"window {name!r}", interval_s=0.05)
    except DeadlineExceeded as exc:
        kind = "class" if by_class else "title"
        raise OperationError(404, f"no window with {kind} matching {name!r} within {timeout_s:g} s") from exc


def activate_window(display: str, name: str, strict: bool, by_class: bool, timeout_s: float) -> WindowInfo:
    """Raise and focus the window matching `name` once it exists; polls up to 2 s for the focus.

    Raises: OperationError(404) when no window matches within `timeout_s` seconds.
    """
    window = wait_for_window(display, name, strict, by_class, timeout_s)
    x11.activate(display, window.wid)

    def focused() -> bool:
        active = x11.active_window(display)
        return active is not None and active.wid == window.wid

    try:
        wait_until(focused, 2.0, "window focus", interval_s=0.02)
    except DeadlineExceeded:
        pass  # some windows refuse focus; OSWorld does not check either
    return window


def close_window(display: str, name: str, strict: bool, by_class: bool, timeout_s: float) -> WindowInfo:
    """Ask the window matching `name` to close and poll up to 2 s for it to go.

    Raises: OperationError(404) when no window matches within `timeout_s` seconds.
    """
    window = wait_for_window(display, name, strict, by_class, timeout_s)
    x11.close(display, window.wid)
    try:
        wait_until(lambda: all(w.wid != window.wid for w in x11.list_windows(display)), 2.0,
                   "window to close", interval_s=0.02)
    except DeadlineExceeded:
        pass  # e.g. an editor asking to save: the request was delivered
    return window


def open_and_activate(display: str, candidates: list[str], timeout_s: float) -> WindowInfo:
    """Wait for a window whose title contains one of `candidates` (OSWorld's `/setup/open_file`
    passes the file name and its stem, or the requested window name), then raise and focus it.

    Raises: OperationError(500) naming the candidates when none appears within `timeout_s` seconds.
    """
    wanted = [c for c in candidates if c]

    def match() -> WindowInfo | None:
        for window in x11.list_windows(display):
            if any(c in window.title for c in wanted):
                return window
        return None

    try:
        window = wait_until(match, timeout_s, f"a window titled like {wanted}", interval_s=0.1)
    except DeadlineExceeded as exc:
        raise OperationError(500, f"Failed to find window for {wanted} within {timeout_s:g} seconds.") from exc
    x11.activate(display, window.wid)
    return window


def verify(display: str, runner: CommandRunner, window_exists: str | None, command_success: str | None,
           max_wait_s: float, interval_s: float) -> bool:
    """Poll every `interval_s` seconds, up to `max_wait_s` (at least once), until a window whose
    title contains `window_exists` (case-insensitive, as OSWorld greps `wmctrl -l`) is open and
    the shell command `command_success` exits 0 within 5 s (each check only when given).
    Source: OSWorld `desktop_env/server/main.py` `/setup/execute_with_verification`."""
    def holds() -> bool:
        if window_exists is not None:
            wanted = window_exists.lower()
            if not any(wanted in w.title.lower() for w in x11.list_windows(display)):
                return False
        if command_success is not None:
            outcome = runner.run(command_success, shell=True, timeout_s=5.0)
            if outcome.status != "success" or outcome.returncode != 0:
                return False
        return True

    try:
        return wait_until(holds, max_wait_s, "verification", interval_s=interval_s)
    except DeadlineExceeded:
        return False
