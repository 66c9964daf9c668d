"""Poll-with-deadline helpers: readiness is polled, never waited for with a fixed sleep."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import TypeVar

import httpx

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """Raised by `wait_until` when the condition did not hold before the deadline."""


class GiveUp(RuntimeError):
    """Raised by a `wait_until` condition when waiting longer is pointless (the awaited process died)."""


def wait_until(
    condition: Callable[[], T | None],
    timeout_s: float,
    what: str,
    interval_s: float = 0.05,
) -> T:
    """Call `condition` until it returns a truthy value (returned) or `timeout_s` seconds pass.

    Exceptions raised by `condition` count as "not yet", except `GiveUp`, which ends the wait at once.
    Raises: GiveUp from the condition; DeadlineExceeded naming `what`, with the last exception if any.
    """
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except GiveUp:
            raise
        except Exception as exc:  # not ready yet
            last_error = exc
        if time.monotonic() >= deadline:
            suffix = f" (last error: {last_error!r})" if last_error else ""
            raise DeadlineExceeded(f"timed out after {timeout_s:.1f}s waiting for {what}{suffix}")
        time.sleep(interval_s)


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    """True when GET `url` answers 2xx within `timeout_s` seconds."""
    try:
        return httpx.get(url, timeout=timeout_s).is_success
    except httpx.HTTPError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on `host` a moment ago (bind to port 0, read it back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
