"""Window geometry and focus as on OSWorld's VM: the apps it shows maximised open maximised, and a new
window gets the keyboard focus.

On OSWorld's Ubuntu VM, Chrome, LibreOffice, VS Code, Thunderbird, GIMP and VLC playing a file fill the
screen (the apps remember a maximised window from the sessions before the VM's snapshot); here they
would open at their own default sizes (Chrome: half the screen). A `Placer` thread watches the window
manager's client list (`_NET_CLIENT_LIST` on the root window) and asks the window manager to maximise
each new window of those apps (EWMH `_NET_WM_STATE` client message, honoured by openbox and mutter
alike) when it is an app's main window: EWMH kind `normal`, no `WM_TRANSIENT_FOR` (dialogs stay where
the app puts them), a WM class (instance or class, lower case) matching a `MAXIMISED` rule, and its
title and role allowed by the rule (VLC only with a file: not while its title is the bare "VLC media
player"; GIMP's image window, not its toolbox or docks). A window whose title does not qualify yet is
watched for `TITLE_WAIT_S` (VLC names its window after the file once it plays it).

Focus: mutter gives a new window the focus only when it can tell that the user asked for it (a startup
notification or a user time); an xterm started by ctrl+alt+t or `gnome-terminal`, a window a task's
setup opens, would come up behind the focused one and the agent's keys would go elsewhere. As openbox
(`focusNew`) and the VM's session (where apps are started by the user) do, every new `normal` or
`dialog` window is activated (`_NET_ACTIVE_WINDOW`, source: a pager) unless it has the focus already.
"""

from __future__ import annotations

import fnmatch
import select
import time
from dataclasses import dataclass

from Xlib import X, Xatom
from Xlib.display import Display
from Xlib.error import XError
from Xlib.protocol import event

from services.desktop_env.x11 import DisplayListener

TITLE_WAIT_S = 30.0
_POLL_S = 0.5
_STATE_ADD = 1  # _NET_WM_STATE_ADD (EWMH)
_SOURCE_PAGER = 2  # _NET_ACTIVE_WINDOW source indication: a pager (honoured without a user time)


@dataclass(frozen=True)
class Rule:
    """Maximise a main window whose WM instance or class matches the glob `wm_class` (lower case),
    whose title is not in `bare_titles` and whose `WM_WINDOW_ROLE` matches `role` (a glob; None: any)."""

    wm_class: str
    bare_titles: frozenset[str] = frozenset()
    role: str | None = None

    def matches_class(self, classes: tuple[str, ...]) -> bool:
        """True when one of `classes` (instance, class) matches."""
        return any(fnmatch.fnmatchcase(name.lower(), self.wm_class) for name in classes)

    def allows(self, title: str, role: str) -> bool:
        """True when `title` and `role` qualify the window (see the class doc)."""
        if not title or title in self.bare_titles:
            return False
        return self.role is None or fnmatch.fnmatchcase(role, self.role)


MAXIMISED: tuple[Rule, ...] = (
    Rule("chromium*"), Rule("google-chrome*"),
    Rule("libreoffice*"), Rule("soffice"),
    Rule("code"),
    Rule("thunderbird*"),
    Rule("gimp*", role="gimp-image-window*"),
    Rule("vlc", bare_titles=frozenset({"VLC media player"})),
)


def rule_for(classes: tuple[str, ...]) -> Rule | None:
    """The first `MAXIMISED` rule whose class matches, or None."""
    return next((rule for rule in MAXIMISED if rule.matches_class(classes)), None)


class Placer(DisplayListener):
    """Maximises the main windows of `MAXIMISED` apps on `display` (see the module doc) from a daemon
    thread, until `stop()`."""

    def __init__(self, display: str) -> None:
        super().__init__(display, "window placement", f"placer-{display}")
        self._seen: set[int] = set()
        self._pending: dict[int, float] = {}  # wid -> when first seen (its title does not qualify yet)

    def listen(self, conn: Display) -> None:
        """Scan the client list at start and on every property change of the root window (a new client
        changes `_NET_CLIENT_LIST`); poll while windows are pending."""
        conn.screen().root.change_attributes(event_mask=X.PropertyChangeMask)
        self._scan(conn)
        while not self.stopping:
            readable, _, _ = select.select([conn.fileno()], [], [], _POLL_S)
            if readable or conn.pending_events():
                while conn.pending_events():
                    conn.next_event()
                self._scan(conn)
            elif self._pending:
                self._scan(conn)

    def _scan(self, conn: Display) -> None:
        """Look at the client list: decide every new window and the pending ones."""
        root = conn.screen().root
        prop = root.get_full_property(conn.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType)
        wids = [int(wid) for wid in (prop.value if prop is not None else [])]
        self._seen &= set(wids)
        now = time.monotonic()
        for wid in wids:
            if wid in self._seen and wid not in self._pending:
                continue
            self._seen.add(wid)
            try:
                decided = self._place(conn, wid)
            except XError:  # the window went away meanwhile
                decided = True
            if decided:
                self._pending.pop(wid, None)
            elif now - self._pending.setdefault(wid, now) > TITLE_WAIT_S:
                self._pending.pop(wid)
        conn.flush()

    def _place(self, conn: Display, wid: int) -> bool:
        """Maximise `wid` when it qualifies; True once decided (maximised or never will be), False
        while its title may still change to qualify."""
        window = conn.create_resource_object("window", wid)
        kind_prop = window.get_full_property(conn.intern_atom("_NET_WM_WINDOW_TYPE"), Xatom.ATOM)
        kind = int(kind_prop.value[0]) if kind_prop is not None and len(kind_prop.value) else None
        normal = kind is None or kind == conn.intern_atom("_NET_WM_WINDOW_TYPE_NORMAL")
        if wid not in self._pending and (normal or kind == conn.intern_atom("_NET_WM_WINDOW_TYPE_DIALOG")):
            self._activate(conn, wid)
        rule = rule_for(tuple(window.get_wm_class() or ()))
        if rule is None or window.get_wm_transient_for() is not None or not normal:
            return True
        title = _text(conn, window, "_NET_WM_NAME") or _text(conn, window, "WM_NAME")
        role = _text(conn, window, "WM_WINDOW_ROLE")
        if not rule.allows(title, role):
            if not self._pending.get(wid):
                window.change_attributes(event_mask=X.PropertyChangeMask)  # wake up on title changes
            return False
        _send(conn, wid, "_NET_WM_STATE", [_STATE_ADD, conn.intern_atom("_NET_WM_STATE_MAXIMIZED_VERT"),
                                           conn.intern_atom("_NET_WM_STATE_MAXIMIZED_HORZ"), 1, 0])
        return True

    def _activate(self, conn: Display, wid: int) -> None:
        root = conn.screen().root
        active = root.get_full_property(conn.intern_atom("_NET_ACTIVE_WINDOW"), X.AnyPropertyType)
        if active is None or not len(active.value) or int(active.value[0]) != wid:
            _send(conn, wid, "_NET_ACTIVE_WINDOW", [_SOURCE_PAGER, X.CurrentTime, 0, 0, 0])


def _send(conn: Display, wid: int, message_type: str, data: list[int]) -> None:
    """Send the EWMH client message `message_type` about window `wid` to the window manager."""
    window = conn.create_resource_object("window", wid)
    message = event.ClientMessage(window=window, client_type=conn.intern_atom(message_type), data=(32, data))
    conn.screen().root.send_event(message, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)


def _text(conn: Display, window: object, name: str) -> str:
    prop = window.get_full_property(conn.intern_atom(name), X.AnyPropertyType)  # type: ignore[attr-defined]
    if prop is None:
        return ""
    value = prop.value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
