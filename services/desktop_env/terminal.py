"""Text of the env's terminal windows (OSWorld `GET /terminal`).

OSWorld reads gnome-terminal's text through the accessibility bus. Our terminal is an xterm started
with its own logging (`-l -lf <log>`), one log per xterm named after its pid (which is the window's
`_NET_WM_PID`). `render()` replays the logged byte stream on pyte's VT100/xterm screen of the
terminal's current size (its pty's window size), so wrapping, cursor moves, erasing and scroll
regions come out as xterm draws them. The text: the scrollback (xterm keeps `SAVE_LINES`) and the
screen, a line the terminal wrapped as one line (as VTE's accessible text, which OSWorld reads,
joins soft-wrapped rows), trailing blanks removed. A full-screen program (vim, less, top) shows on
the alternate screen while it runs; after it exits the shell's screen is back, as in xterm.

Limits: the log is replayed at the terminal's size now (xterm does not reflow old lines when
resized, so lines printed before a resize may wrap differently here); only the last
`MAX_REPLAY_BYTES` of a log are replayed (pyte runs at a few hundred KB/s), which holds more than
the scrollback of ordinary output.
"""

from __future__ import annotations

import copy
import logging
import os
from collections import defaultdict, deque
from pathlib import Path
from typing import Any, cast

import psutil
import pyte
from pyte import modes

from services.desktop_env import x11
from services.desktop_env.processes import is_alive

log = logging.getLogger(__name__)

SAVE_LINES = 1024  # xterm's default `saveLines`: scrollback kept
MAX_REPLAY_BYTES = 256 * 1024
DEFAULT_SIZE = (80, 24)  # xterm's default geometry: columns, lines
_ALTERNATE = {47, 1047, 1049}  # xterm's alternate screen modes (1049 also saves the cursor)


class _Line(pyte.screens.StaticDefaultDict[int, pyte.screens.Char]):
    """One screen row (column -> character); `wrapped` when the text went on in the next row
    because it reached the last column (autowrap), not because of a newline."""

    wrapped = False


class _Screen(pyte.Screen):
    """pyte's screen plus what xterm has and pyte lacks: the alternate screen, scrollback (rows that
    scroll off the top of a full-height scroll region), soft-wrap marks."""

    def __init__(self, columns: int, lines: int) -> None:
        self.scrollback: deque[_Line] = deque(maxlen=SAVE_LINES)
        self._main: tuple[Any, pyte.screens.Cursor, deque[_Line]] | None = None
        super().__init__(columns, lines)

    def reset(self) -> None:
        super().reset()
        self.buffer = defaultdict(lambda: _Line(self.default_char))

    def row(self, y: int) -> _Line:
        """Screen row `y` (0 = top); every row of this screen is a `_Line`."""
        return cast(_Line, self.buffer[y])

    def draw(self, data: str) -> None:
        while data:
            room = self.columns - self.cursor.x
            if room <= 0 and modes.DECAWM in self.mode:
                self.row(self.cursor.y).wrapped = True  # the next character starts the next row
            take = room if room > 0 and data[:room].isascii() else 1  # ASCII: one cell each
            super().draw(data[:take])
            data = data[take:]

    def index(self) -> None:
        top, bottom = self.margins or pyte.screens.Margins(0, self.lines - 1)
        if self.cursor.y == bottom and top == 0:
            self.scrollback.append(self.row(top))
        super().index()

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        super().erase_in_line(how, private)
        if how in (0, 2):
            self.row(self.cursor.y).wrapped = False

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        super().erase_in_display(how, *args, **kwargs)
        rows = {0: range(self.cursor.y, self.lines), 1: range(self.cursor.y)}.get(how, range(self.lines))
        for y in rows:
            self.row(y).wrapped = False
        if how == 3:  # xterm's "erase saved lines" (`clear` sends it)
            self.scrollback.clear()

    def set_mode(self, *numbers: int, **kwargs: Any) -> None:
        if kwargs.get("private") and _ALTERNATE & set(numbers) and self._main is None:
            self._main = (self.buffer, copy.copy(self.cursor), self.scrollback)
            self.buffer = defaultdict(lambda: _Line(self.default_char))
            self.scrollback = deque(maxlen=0)  # the alternate screen has no scrollback
        super().set_mode(*numbers, **kwargs)

    def reset_mode(self, *numbers: int, **kwargs: Any) -> None:
        if kwargs.get("private") and _ALTERNATE & set(numbers) and self._main is not None:
            self.buffer, cursor, self.scrollback = self._main
            if 1049 in numbers:
                self.cursor = cursor
            self._main = None
            self.dirty.update(range(self.lines))
        super().reset_mode(*numbers, **kwargs)

    def text(self) -> str:
        """Scrollback and screen, one line per logical line (soft-wrapped rows joined)."""
        out: list[str] = []
        pending = ""
        for line in [*self.scrollback, *(self.row(y) for y in range(self.lines))]:
            row = "".join(line[x].data for x in range(self.columns))
            if line.wrapped:
                pending += row
                continue
            out.append((pending + row).rstrip())
            pending = ""
        if pending:
            out.append(pending.rstrip())
        return "\n".join(out).rstrip()


def render(data: bytes, columns: int = DEFAULT_SIZE[0], lines: int = DEFAULT_SIZE[1]) -> str:
    """The text (see the module doc) of a `columns` x `lines` terminal after it received `data`
    (UTF-8, with escape sequences). Only the last `MAX_REPLAY_BYTES` are replayed, from a line start.

    Raises: ValueError when the size is not positive.
    """
    if columns < 1 or lines < 1:
        raise ValueError(f"terminal size must be positive, got {columns}x{lines}")
    if len(data) > MAX_REPLAY_BYTES:
        tail = data[-MAX_REPLAY_BYTES:]
        data = tail[tail.find(b"\n") + 1:]
    screen = _Screen(columns, lines)
    pyte.ByteStream(screen).feed(data)
    return screen.text()


def window_size(xterm_pid: int) -> tuple[int, int]:
    """(columns, lines) of the xterm `xterm_pid` now: the window size of its shell's pty (xterm sets
    it on every resize); xterm's default 80x24 when there is no child with a terminal (any more)."""
    try:
        ttys = [child.terminal() for child in psutil.Process(xterm_pid).children()]
    except psutil.Error:
        ttys = []
    for tty in ttys:
        if tty is None:
            continue
        try:
            fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            size = os.get_terminal_size(fd)  # ioctl TIOCGWINSZ
            return size.columns, size.lines
        except OSError:
            continue
        finally:
            os.close(fd)
    return DEFAULT_SIZE


class TerminalLogs:
    """The logs of this env's terminals, in `log_dir` as `terminal-<pid>.log`."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir

    def log_path_pattern(self) -> str:
        """Shell expression of a new terminal's log path (`$$` = the xterm's pid after `exec`)."""
        return f"{self.log_dir}/terminal-$$.log"

    def _log_for(self, pid: int) -> Path:
        return self.log_dir / f"terminal-{pid}.log"

    @staticmethod
    def _pid_of(path: Path) -> int:
        return int(path.stem.split("-")[1])

    def _render(self, path: Path) -> str:
        return render(path.read_bytes(), *window_size(self._pid_of(path)))

    def current_text(self, display: str) -> str | None:
        """Text of the focused terminal, else of the newest terminal still open; None when no
        terminal is open (OSWorld returns `output: null` then)."""
        active = x11.active_window(display)
        if active is not None and active.pid is not None and self._log_for(active.pid).exists():
            return self._render(self._log_for(active.pid))
        live = [p for p in self.log_dir.glob("terminal-*.log") if is_alive(self._pid_of(p))]
        if not live:
            return None
        return self._render(max(live, key=lambda p: p.stat().st_mtime))

    def clear(self) -> None:
        """Delete every terminal log (on reset, after the terminals are gone)."""
        for path in self.log_dir.glob("terminal-*.log"):
            path.unlink(missing_ok=True)
