"""The env pod's log of executed actions: every `POST /execute` (the agent's actions; setup commands go to
`/setup/execute` and are not logged), numbered from 1, with its times, command and result. The runner joins
it with an external agent's model calls (services/runner/external.py): `GET /execute_log?after=<seq>`.

Memory: the last `MAX_ENTRIES` entries, each command and output cut to `MAX_TEXT` characters (their ends).
Numbers keep growing across `/reset` (which empties the log), so a reader's `after` never points back.
"""

from __future__ import annotations

import threading
import time
from collections import deque

from pydantic import BaseModel

MAX_ENTRIES = 10_000
MAX_TEXT = 4_000


class ExecutedAction(BaseModel):
    """One `/execute`: `seq` (1-based), `started_at` / `ended_at` (epoch s), the command as sent (a string, or
    an argv list), `shell`, and the reply's `status`, `returncode`, `output` and `error` (their last
    `MAX_TEXT` characters)."""

    seq: int
    started_at: float
    ended_at: float
    command: list[str] | str
    shell: bool
    status: str
    returncode: int
    output: str
    error: str


class ExecuteLogReply(BaseModel):
    """`GET /execute_log`: the entries after `after`, oldest first, and the newest number so far (0: none)."""

    entries: list[ExecutedAction]
    last: int


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[-MAX_TEXT:]


class ExecuteLog:
    """Thread-safe ring of `ExecutedAction`s."""

    def __init__(self) -> None:
        self._entries: deque[ExecutedAction] = deque(maxlen=MAX_ENTRIES)
        self._last = 0
        self._lock = threading.Lock()

    def add(self, started_at: float, command: list[str] | str, shell: bool, status: str, returncode: int,
            output: str, error: str) -> None:
        """Log one finished `/execute` (its request's command, and its reply's fields)."""
        if isinstance(command, str):
            command = _cut(command)
        else:
            command = [_cut(part) for part in command]
        with self._lock:
            self._last += 1
            self._entries.append(ExecutedAction(
                seq=self._last, started_at=started_at, ended_at=time.time(), command=command, shell=shell,
                status=status, returncode=returncode, output=_cut(output), error=_cut(error)))

    def since(self, after: int) -> ExecuteLogReply:
        """The entries numbered above `after`."""
        with self._lock:
            return ExecuteLogReply(entries=[e for e in self._entries if e.seq > after], last=self._last)

    def clear(self) -> None:
        """Empty the log (its numbering goes on)."""
        with self._lock:
            self._entries.clear()
