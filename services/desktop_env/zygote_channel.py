"""The server's end of one zygote's control channel (protocol in `zygote_process`): standbys handed
over by the zygote, exit statuses of its children, requests to fork or kill. A reader thread
collects what the zygote sends; requests take standbys from it."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Standby:
    """A forked child waiting for its request: `conn` is connected to it; its stdout and stderr go
    to the memory files `out_fd` and `err_fd` (read back when it ends without answering)."""

    pid: int
    conn: socket.socket
    out_fd: int
    err_fd: int

    def close(self) -> None:
        """Close our descriptors (an unused standby then exits)."""
        self.conn.close()
        for fd in (self.out_fd, self.err_fd):
            os.close(fd)


class ControlChannel:
    """The control socket of one zygote process (`SOCK_SEQPACKET`); thread-safe."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._standbys: deque[Standby] = deque()
        self._exits: dict[int, int] = {}
        self._forget: set[int] = set()  # children whose exit status nobody will ask for
        self._closed = False
        self._cond = threading.Condition()
        threading.Thread(target=self._read, name="zygote-control", daemon=True).start()

    @property
    def closed(self) -> bool:
        """True once the zygote closed the channel (it exited) or `close()` was called."""
        return self._closed

    def _read(self) -> None:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.sock, 64, 3)
            except OSError:
                data, fds = b"", []
            kind, *fields = data.split() or [b""]
            with self._cond:
                if kind == b"S" and len(fds) == 3:
                    self._standbys.append(Standby(int(fields[0]), socket.socket(fileno=fds[0]), fds[1], fds[2]))
                    fds = []
                elif kind == b"X":
                    pid, status = int(fields[0]), int(fields[1])
                    if pid in self._forget:
                        self._forget.discard(pid)
                    else:
                        self._exits[pid] = status
                elif not data:
                    self._closed = True
                self._cond.notify_all()
            for fd in fds:  # unexpected descriptors
                os.close(fd)
            if not data:
                return

    def take(self, timeout_s: float) -> Standby | None:
        """The oldest standby still alive, waiting up to `timeout_s` seconds for one (0: never
        wait); None when none came or the zygote is gone."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                while self._standbys:
                    standby = self._standbys.popleft()
                    if standby.pid in self._exits:  # it died while waiting
                        del self._exits[standby.pid]
                        standby.close()
                        continue
                    return standby
                remaining = deadline - time.monotonic()
                if self._closed or remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def send(self, message: bytes) -> None:
        """Send `U` (fork a standby) or `K <pid>` (kill that child and its process group); ignored
        once the zygote is gone."""
        try:
            self.sock.send(message)
        except OSError:
            pass

    def exit_status(self, pid: int, timeout_s: float) -> int | None:
        """The exit status of child `pid` (negative: killed by that signal), waiting up to
        `timeout_s` seconds; None when the zygote went away first or it did not come."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while pid not in self._exits:
                remaining = deadline - time.monotonic()
                if self._closed or remaining <= 0:
                    return None
                self._cond.wait(remaining)
            return self._exits.pop(pid)

    def forget(self, pid: int) -> None:
        """Nobody will ask for child `pid`'s exit status: drop it when it comes."""
        with self._cond:
            if self._exits.pop(pid, None) is None:
                self._forget.add(pid)

    def close(self) -> None:
        """Close the channel and every standby not taken."""
        with self._cond:
            self._closed = True
            standbys, self._standbys = list(self._standbys), deque()
            self._cond.notify_all()
        for standby in standbys:
            standby.close()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
