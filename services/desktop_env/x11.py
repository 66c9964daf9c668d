"""Small X11 queries and window actions for one display (python-xlib, wmctrl, xdpyinfo).

Connections: one python-xlib connection per (thread, display), opened on first use and kept
(opening one costs 10-30 ms: python-xlib parses the server's connection setup and queries every
extension). python-xlib connections are not meant to be shared across threads, so each thread has
its own. A connection the X server closed (the display was restarted) is dropped and reopened once.
Events the server sends unasked (MappingNotify after keymap changes) are drained so the queue of a
long-lived connection never grows.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from Xlib import X
from Xlib.display import Display
from Xlib.error import ConnectionClosedError, DisplayError, XError, xerror_class

T = TypeVar("T")
_local = threading.local()
log = logging.getLogger(__name__)


class DisplayListener:
    """A daemon thread with an X connection of its own to `display`, running `listen(conn)` until `stop()`
    (`listen` polls `stopping`, at most every ~0.5 s). A display that cannot be opened, or an error while
    listening, is logged naming `what` and ends the thread: the env server never crashes over it. Subclassed by
    `placement.Placer` and `hotkeys.TerminalHotkey`."""

    def __init__(self, display: str, what: str, thread_name: str) -> None:
        self.display = display
        self.what = what
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

    @property
    def stopping(self) -> bool:
        """True once `stop()` was called."""
        return self._stop.is_set()

    def start(self) -> None:
        """Start the thread (returns at once)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop listening; returns once the thread has ended (at most ~0.5 s)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)

    def listen(self, conn: Display) -> None:
        """The thread's work on its own connection, until `stopping`."""
        raise NotImplementedError

    def _run(self) -> None:
        try:
            conn = Display(self.display)
        except Exception as exc:  # the display went away: nothing to listen to
            log.warning("%s off on %s: %s", self.what, self.display, exc)
            return
        try:
            self.listen(conn)
        except Exception:  # the X server closed (session stopping) or a bug: log, never crash the server
            if not self.stopping:
                log.exception("%s stopped on %s", self.what, self.display)
        finally:
            conn.close()


@dataclass(frozen=True)
class WindowInfo:
    """A managed top-level window (from the window manager's `_NET_CLIENT_LIST`).

    `wm_class` is `"instance.Class"` as `wmctrl -x` shows it; geometry is in screen pixels; `kind` is
    the EWMH window type without its prefix, lower case (`normal`, `dialog`, `splash`, ...; `normal`
    when unset, as EWMH says for a window without `WM_TRANSIENT_FOR`); `maximized` when the window
    manager set both `_NET_WM_STATE_MAXIMIZED_VERT` and `_HORZ` (or `_FULLSCREEN`).
    """

    wid: int
    title: str
    wm_class: str
    pid: int | None
    x: int
    y: int
    width: int
    height: int
    active: bool
    kind: str = "normal"
    maximized: bool = False


def repair_error_classes(conn: Display) -> Display:
    """Work around python-xlib's RANDR extension registering its errors at the wrong codes, which
    shadows core errors (BadValue parses as BadRRModeError and crashes the reply parser)."""
    conn.display.error_classes.update(xerror_class)
    return conn


def _connections() -> dict[str, Display]:
    conns: dict[str, Display] | None = getattr(_local, "conns", None)
    if conns is None:
        conns = _local.conns = {}
    return conns


def _thread_connection(display: str) -> Display:
    conns = _connections()
    conn = conns.get(display)
    if conn is None:
        conn = conns[display] = repair_error_classes(Display(display))
    return conn


def drop_connection(display: str) -> None:
    """Close and forget this thread's connection to `display` (the next use opens a new one)."""
    conn = _connections().pop(display, None)
    if conn is not None:
        try:
            conn.close()
        except (OSError, DisplayError, ConnectionClosedError):  # already closed by the server
            pass


def with_connection(display: str, action: Callable[[Display], T]) -> T:
    """`action(conn)` on this thread's connection to `display`; when the server closed that
    connection (display restarted), reconnects and retries once.

    Raises: Xlib's errors (DisplayConnectionError when the display is unreachable, XError).
    """
    for attempt in (1, 2):
        conn = _thread_connection(display)
        try:
            while conn.pending_events():  # unasked events (MappingNotify): never let them pile up
                conn.next_event()
            return action(conn)
        except (ConnectionClosedError, BrokenPipeError, ConnectionResetError):
            drop_connection(display)
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@contextmanager
def connect(display: str) -> Iterator[Display]:
    """This thread's connection to `display` (kept open for later calls; see module doc).

    Raises: Xlib's errors when unreachable.
    """
    yield _thread_connection(display)


def display_ready(display: str) -> bool:
    """True when an X server answers on `display` (`xdpyinfo` exits 0)."""
    try:
        result = subprocess.run(["xdpyinfo", "-display", display], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=5)
    except subprocess.TimeoutExpired:
        return False
    return result.returncode == 0


def wm_running(display: str) -> bool:
    """True when an EWMH window manager runs on `display` (`_NET_SUPPORTING_WM_CHECK` is set)."""
    def check(conn: Display) -> bool:
        root = conn.screen().root
        prop = root.get_full_property(conn.intern_atom("_NET_SUPPORTING_WM_CHECK"), X.AnyPropertyType)
        return bool(prop and len(prop.value))

    return with_connection(display, check)


def screen_size(display: str) -> tuple[int, int]:
    """`(width, height)` of screen 0 in pixels."""
    def size(conn: Display) -> tuple[int, int]:
        screen = conn.screen()
        return int(screen.width_in_pixels), int(screen.height_in_pixels)

    return with_connection(display, size)


def cursor_position(display: str) -> tuple[int, int]:
    """Pointer position `(x, y)` in screen pixels."""
    def position(conn: Display) -> tuple[int, int]:
        pointer = conn.screen().root.query_pointer()
        return int(pointer.root_x), int(pointer.root_y)

    return with_connection(display, position)


def _text_property(conn: Display, window: Any, name: str) -> str | None:
    """`name`'s text property of `window` (a python-xlib Window, typed Any: its stubs lack `get_full_property`)."""
    prop = window.get_full_property(conn.intern_atom(name), X.AnyPropertyType)
    if prop is None:
        return None
    value = prop.value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _window_info(conn: Display, wid: int, active_wid: int | None) -> WindowInfo | None:
    window = conn.create_resource_object("window", wid)
    try:
        title = _text_property(conn, window, "_NET_WM_NAME") or _text_property(conn, window, "WM_NAME") or ""
        wm_class = window.get_wm_class() or ("", "")
        pid_prop = window.get_full_property(conn.intern_atom("_NET_WM_PID"), X.AnyPropertyType)
        geometry = window.get_geometry()
        origin = window.translate_coords(conn.screen().root, 0, 0)
        kind = _window_type(conn, window)
        states = _atom_names(conn, window, "_NET_WM_STATE")
    except XError:  # the window went away while we looked at it
        return None
    return WindowInfo(
        wid=wid,
        title=title,
        wm_class=".".join(wm_class),
        pid=int(pid_prop.value[0]) if pid_prop is not None and len(pid_prop.value) else None,
        x=-int(origin.x),
        y=-int(origin.y),
        width=int(geometry.width),
        height=int(geometry.height),
        active=wid == active_wid,
        kind=kind,
        maximized=_MAXIMIZED <= states or "_NET_WM_STATE_FULLSCREEN" in states,
    )


_MAXIMIZED = frozenset({"_NET_WM_STATE_MAXIMIZED_VERT", "_NET_WM_STATE_MAXIMIZED_HORZ"})
_TYPE_PREFIX = "_NET_WM_WINDOW_TYPE_"


def _atom_names(conn: Display, window: Any, name: str) -> set[str]:
    """Names of the atoms in the ATOM list property `name` of `window` (empty when unset)."""
    prop = window.get_full_property(conn.intern_atom(name), X.AnyPropertyType)
    return {conn.get_atom_name(int(atom)) for atom in (prop.value if prop is not None else [])}


def _window_type(conn: Display, window: Any) -> str:
    """The first EWMH type of `window`, lower case without its prefix; `normal` when unset."""
    prop = window.get_full_property(conn.intern_atom("_NET_WM_WINDOW_TYPE"), X.AnyPropertyType)
    if prop is None or not len(prop.value):
        return "normal"
    return conn.get_atom_name(int(prop.value[0])).removeprefix(_TYPE_PREFIX).lower()


def list_windows(display: str) -> list[WindowInfo]:
    """Managed top-level windows, oldest first (empty when no window manager runs)."""
    def windows(conn: Display) -> list[WindowInfo]:
        root = conn.screen().root
        clients = root.get_full_property(conn.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType)
        active = root.get_full_property(conn.intern_atom("_NET_ACTIVE_WINDOW"), X.AnyPropertyType)
        active_wid = int(active.value[0]) if active is not None and len(active.value) else None
        infos = [_window_info(conn, int(wid), active_wid) for wid in (clients.value if clients else [])]
        return [info for info in infos if info is not None]

    return with_connection(display, windows)


def active_window(display: str) -> WindowInfo | None:
    """The focused window, or None."""
    return next((w for w in list_windows(display) if w.active), None)


def match_windows(
    windows: list[WindowInfo], name: str, strict: bool = False, by_class: bool = False
) -> list[WindowInfo]:
    """Windows matching `name` the way `wmctrl -a` does (OSWorld `/setup/activate_window`): a
    case-insensitive substring of the title (`by_class`: of `instance.Class`); `strict`: the whole
    string, case-sensitive."""
    def key(w: WindowInfo) -> str:
        return w.wm_class if by_class else w.title

    if strict:
        return [w for w in windows if key(w) == name]
    return [w for w in windows if name.lower() in key(w).lower()]


def _wmctrl(display: str, action: str, wid: int) -> None:
    subprocess.run(["wmctrl", "-i", action, hex(wid)], env={**os.environ, "DISPLAY": display},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=5, check=False)


def activate(display: str, wid: int) -> None:
    """Raise and focus window `wid` (EWMH `_NET_ACTIVE_WINDOW` via wmctrl)."""
    _wmctrl(display, "-a", wid)


def close(display: str, wid: int) -> None:
    """Ask window `wid` to close gracefully (EWMH `_NET_CLOSE_WINDOW` via wmctrl)."""
    _wmctrl(display, "-c", wid)


def kill_clients(display: str, wids: list[int]) -> None:
    """Disconnect the X clients owning `wids` (XKillClient): the last resort for windows whose
    process is not ours to signal; most toolkits exit when their connection goes."""
    def kill(conn: Display) -> None:
        for wid in wids:
            try:
                conn.create_resource_object("window", wid).kill_client()
            except XError:
                pass
        conn.sync()

    with_connection(display, kill)


def window_size(display: str, app_class_name: str) -> tuple[int, int] | None:
    """`(width, height)` in pixels of the first managed window (`_NET_CLIENT_LIST` order) one of
    whose WM_CLASS strings equals `app_class_name`, case-insensitively; None when there is none.
    Source of the rule: OSWorld `desktop_env/server/main.py` `/window_size`."""
    wanted = app_class_name.lower()

    def find(conn: Display) -> tuple[int, int] | None:
        root = conn.screen().root
        clients = root.get_full_property(conn.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType)
        for wid in clients.value if clients else []:
            window = conn.create_resource_object("window", int(wid))
            try:
                wm_class = window.get_wm_class()
                if wm_class and wanted in (name.lower() for name in wm_class):
                    geometry = window.get_geometry()
                    return int(geometry.width), int(geometry.height)
            except XError:  # the window went away while we looked at it
                continue
        return None

    return with_connection(display, find)
