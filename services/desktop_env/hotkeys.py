"""Ubuntu's ctrl+alt+t under GNOME Shell: opens the env's terminal.

On Ubuntu the shortcut belongs to gnome-settings-daemon's media keys, which is not run here (it wants
systemd's user session). A `TerminalHotkey` thread grabs ctrl+alt+t on the root window (with any of
the Num Lock / Caps Lock states) and starts the terminal command with the session's environment, so
the terminal belongs to the env (its processes are stopped by a reset). Under openbox its own
`rc.xml` binding does this instead.
"""

from __future__ import annotations

import logging
import select
import threading
from collections.abc import Callable

from Xlib import XK, X
from Xlib.display import Display

from services.desktop_env.x11 import DisplayListener

log = logging.getLogger(__name__)

_POLL_S = 0.5
_LOCKS = (0, X.LockMask, X.Mod2Mask, X.LockMask | X.Mod2Mask)  # Caps Lock, Num Lock


class TerminalHotkey(DisplayListener):
    """Calls `launch()` (which starts the terminal) on ctrl+alt+t pressed on `display`, until `stop()`."""

    def __init__(self, display: str, launch: Callable[[], object]) -> None:
        super().__init__(display, "ctrl+alt+t", f"hotkey-{display}")
        self.launch = launch
        self._grabbed = threading.Event()

    def start(self, timeout_s: float = 5.0) -> bool:  # type: ignore[override]  # also says whether it grabbed
        """Start the thread; True once the key is grabbed (within `timeout_s`)."""
        super().start()
        return self._grabbed.wait(timeout_s)

    def listen(self, conn: Display) -> None:
        """Grab ctrl+alt+t (with any lock state) on the root window and start the terminal on each press."""
        root = conn.screen().root
        keycode = conn.keysym_to_keycode(XK.string_to_keysym("t"))
        for locks in _LOCKS:
            root.grab_key(keycode, X.ControlMask | X.Mod1Mask | locks, True, X.GrabModeAsync, X.GrabModeAsync)
        conn.sync()
        self._grabbed.set()
        while not self.stopping:
            readable, _, _ = select.select([conn.fileno()], [], [], _POLL_S)
            while readable and conn.pending_events():
                if conn.next_event().type == X.KeyPress:
                    self._launch()

    def _launch(self) -> None:
        try:
            self.launch()
            log.info("ctrl+alt+t: terminal started")
        except Exception as exc:  # never end the listener over one failed start
            log.warning("ctrl+alt+t: starting the terminal failed: %s", exc)
