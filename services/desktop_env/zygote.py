"""The server's handle on the env's zygote (`zygote_process`): start, restart, run one action.

Every `python -c <code>` of `/execute` and every `/run_python` script runs in a fresh process
forked from the zygote: the env's cwd (its home) and environment, fresh module state, its own X
connection, stdout/stderr/exit status as the interpreter gives them; killed with its process group
on timeout. A fork of the warm zygote answers a pyautogui move in a few ms, where a new
interpreter needs ~250 ms to import pyautogui.

The zygote hands us *standbys* (forked children, already connected to the display, waiting on a
socket), so an action costs one hop: we send the request to a standby and it answers. When a child
ends without answering (`os._exit`, a signal, killed at its timeout), its exit status comes from
the zygote and its output from its memory files. The zygote is one of the env's processes (it
carries the env's marker): the server stops it before `reset()` of the session and starts a new
one after; `run()` also starts a new one when it finds the zygote gone.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.desktop_env.action_child import read_memfile
from services.desktop_env.commands import RC_TIMEOUT, CommandRunner, ExecOutcome
from services.desktop_env.zygote_channel import ControlChannel, Standby

log = logging.getLogger(__name__)

PYTHON_C_FILENAME = "<string>"
_STARTUP_S = 60.0  # a new zygote may still be importing pyautogui (slow on a busy machine)
_EXIT_STATUS_S = 10.0  # for the zygote to report a child that ended without answering


class ZygoteError(RuntimeError):
    """The zygote could not be started, or gave no standby, or lost track of a child (a broken env)."""


@dataclass(frozen=True)
class ZygoteReply:
    """What the forked process gave: `returncode` negative when a signal ended it; `timed_out`
    when it was killed at its timeout."""

    output: str
    error: str
    returncode: int
    timed_out: bool

    def outcome(self, timeout_s: float) -> ExecOutcome:
        """The `/execute` reply (see `commands.ExecOutcome`): a timeout is status "error", 124."""
        if self.timed_out:
            return ExecOutcome("error", self.output, f"Command timed out after {timeout_s:g} seconds.\n" + self.error,
                               RC_TIMEOUT)
        return ExecOutcome("success", self.output, self.error, self.returncode)


_RESET_REPLY = ZygoteReply("", "Killed: the env was reset while the action ran.\n", -9, False)


class Zygote:
    """The zygote of one env, started by `runner` (the env's environment and cwd), its log in
    `runtime_dir`. Thread-safe; `run()` / `arun()` calls may overlap (each is its own process)."""

    def __init__(self, runner: CommandRunner, runtime_dir: Path) -> None:
        self.runner = runner
        self.log_path = runtime_dir / "zygote.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: ControlChannel | None = None
        self._generation = 0  # bumped by every start/stop: an action whose zygote was stopped was interrupted
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """Process id of the current zygote, None when none runs."""
        return None if self._process is None else self._process.pid

    def start(self) -> None:
        """Start a new zygote, stopping the previous one (if any). Returns at once: the zygote
        imports pyautogui in the background; requests sent meanwhile wait for its first standby.

        Raises: ZygoteError when the process cannot be started."""
        with self._lock:
            self._start_locked()

    def _start_locked(self) -> None:
        self._stop_locked()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            argv = [sys.executable, "-m", "services.desktop_env.zygote_process", str(theirs.fileno())]
            self._process = self.runner.start_helper(argv, (theirs.fileno(),), self.log_path)
        except OSError as exc:
            ours.close()
            raise ZygoteError(f"cannot start the zygote: {exc}") from exc
        finally:
            theirs.close()
        self._channel = ControlChannel(ours)

    def stop(self) -> None:
        """Kill the zygote and its unused standbys. Actions still running are left to the env's
        reset; each is answered as killed by it."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        self._generation += 1
        process, self._process = self._process, None
        channel, self._channel = self._channel, None
        if process is not None:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            process.wait()
            self.runner.registry.discard(process)
        if channel is not None:
            channel.close()

    def _current(self) -> tuple[ControlChannel, int]:
        """The live zygote's channel and generation, starting a new zygote when it is gone."""
        with self._lock:
            if self._channel is None or self._channel.closed:
                if self._channel is not None:
                    log.warning("the zygote exited (see %s); starting a new one", self.log_path)
                self._start_locked()
            assert self._channel is not None
            return self._channel, self._generation

    def _take(self, wait_s: float) -> tuple[ControlChannel, int, Standby]:
        """A standby of the live zygote (waiting up to `wait_s` s; a zygote gone meanwhile is
        replaced once). Raises: ZygoteError when none comes."""
        for _ in (1, 2):
            channel, generation = self._current()
            standby = channel.take(wait_s)
            if standby is not None:
                return channel, generation, standby
            if not channel.closed:
                break
        raise ZygoteError(f"the zygote gave no standby within {wait_s:g} s (see {self.log_path})")

    def run(self, code: str, argv: list[str], env: Mapping[str, str], cwd: Path, timeout_s: float,
            filename: str = PYTHON_C_FILENAME) -> ZygoteReply:
        """Run `code` in a fresh forked process, as `python -c code` (or `python filename` when
        `filename` is a path) with `sys.argv` = `argv`, at most `timeout_s` seconds.

        An action whose zygote was stopped meanwhile (the env is being reset) is answered as killed
        (`returncode` -9, a note on stderr), like a subprocess the reset kills.

        Raises: ZygoteError when the zygote gives no standby or loses track of the child.
        """
        channel, generation, standby = self._take(_STARTUP_S)
        try:
            standby.conn.settimeout(timeout_s)
            try:
                standby.conn.sendall(_payload(code, argv, env, cwd, filename))
                line, timed_out = _recv_line(standby.conn), False
            except TimeoutError:
                line, timed_out = b"", True
                channel.send(b"K %d" % standby.pid)
            except OSError:  # the standby died before answering
                line, timed_out = b"", False
            return self._finish(channel, generation, standby, line, timed_out)
        finally:
            channel.send(b"U")
            standby.close()

    async def arun(self, code: str, argv: list[str], env: Mapping[str, str], cwd: Path,
                   timeout_s: float) -> ZygoteReply:
        """`run()` of `python -c` code for the event loop: no worker thread between the request and
        the forked process while a standby is ready. Same replies and errors."""
        taken = None
        channel, generation = self._current()
        ready = channel.take(0)
        if ready is not None:
            taken = (channel, generation, ready)
        else:
            taken = await asyncio.to_thread(self._take, _STARTUP_S)
        channel, generation, standby = taken
        loop = asyncio.get_running_loop()
        try:
            standby.conn.setblocking(False)
            try:
                await loop.sock_sendall(standby.conn, _payload(code, argv, env, cwd, PYTHON_C_FILENAME))
                line, timed_out = await asyncio.wait_for(_arecv_line(loop, standby.conn), timeout_s), False
            except TimeoutError:
                line, timed_out = b"", True
                channel.send(b"K %d" % standby.pid)
            except OSError:  # the standby died before answering
                line, timed_out = b"", False
            if line:
                return self._finish(channel, generation, standby, line, timed_out)
            return await asyncio.to_thread(self._finish, channel, generation, standby, line, timed_out)
        finally:
            channel.send(b"U")
            standby.close()

    def _finish(self, channel: ControlChannel, generation: int, standby: Standby, line: bytes,
                timed_out: bool) -> ZygoteReply:
        """The reply from the child's answer `line`, or, without one, from its exit status (may
        wait up to `_EXIT_STATUS_S`) and its memory files."""
        if line:
            channel.forget(standby.pid)
            data = json.loads(line)
            return ZygoteReply(str(data["output"]), str(data["error"]), int(data["returncode"]), False)
        status = channel.exit_status(standby.pid, _EXIT_STATUS_S)
        if status is None:
            if generation != self._generation:
                return _RESET_REPLY
            raise ZygoteError(f"the zygote lost track of action process {standby.pid} (see {self.log_path})")
        return ZygoteReply(read_memfile(standby.out_fd), read_memfile(standby.err_fd), status, timed_out)


def _payload(code: str, argv: list[str], env: Mapping[str, str], cwd: Path, filename: str) -> bytes:
    request = {"code": code, "filename": filename, "argv": argv, "env": dict(env), "cwd": str(cwd)}
    return json.dumps(request).encode() + b"\n"


def _recv_line(conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    while not chunks or not chunks[-1].endswith(b"\n"):
        chunk = conn.recv(1 << 16)
        if not chunk:
            return b""
        chunks.append(chunk)
    return b"".join(chunks)


async def _arecv_line(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    while not chunks or not chunks[-1].endswith(b"\n"):
        chunk = await loop.sock_recv(conn, 1 << 16)
        if not chunk:
            return b""
        chunks.append(chunk)
    return b"".join(chunks)
