"""`InputRecorder`: a real X client that records the input events pyautogui actions produce, so
tests see exactly which buttons, keys and pointer moves reached the display."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from Xlib import XK, X
from Xlib.display import Display

from common.polling import wait_until

# keysym -> its X name ("Return", "a", "Shift_L"), from python-xlib's XK_* constants
_KEYSYM_NAMES = {value: name[3:] for name, value in sorted(vars(XK).items(), reverse=True)
                 if name.startswith("XK_") and isinstance(value, int)}
_KINDS = {X.ButtonPress: "press", X.ButtonRelease: "release", X.KeyPress: "key", X.KeyRelease: "keyup",
          X.MotionNotify: "motion"}


@dataclass(frozen=True)
class InputEvent:
    """`kind`: press / release (mouse button `detail` 1-7), key / keyup (`detail` the keysym
    name, e.g. "a", "Shift_L"), motion; `x`, `y` in screen pixels."""

    kind: str
    detail: str
    x: int
    y: int


class InputRecorder:
    """A full-screen, unmanaged (override-redirect) window on `display` with the input focus,
    recording the button, key and motion events it receives. Use as a context manager."""

    def __init__(self, display: str) -> None:
        self.conn = Display(display)
        screen = self.conn.screen()
        mask = (X.ButtonPressMask | X.ButtonReleaseMask | X.KeyPressMask | X.KeyReleaseMask
                | X.PointerMotionMask | X.StructureNotifyMask)
        self.window = screen.root.create_window(0, 0, screen.width_in_pixels, screen.height_in_pixels, 0,
                                                screen.root_depth, X.InputOutput, X.CopyFromParent,
                                                background_pixel=screen.white_pixel, override_redirect=True,
                                                event_mask=mask)
        self.window.map()
        self.conn.sync()
        self._events: list[InputEvent] = []
        wait_until(self._mapped, 5, "the recorder window to be mapped", interval_s=0.01)
        self.window.set_input_focus(X.RevertToParent, X.CurrentTime)
        self.conn.sync()

    def _mapped(self) -> bool:
        return bool(self.window.get_attributes().map_state == X.IsViewable)

    def _drain(self) -> None:
        while self.conn.pending_events():
            event: Any = self.conn.next_event()
            kind = _KINDS.get(event.type)
            if kind is None:
                continue
            if kind in ("key", "keyup"):
                keysym = self.conn.keycode_to_keysym(event.detail, 0)
                detail = _KEYSYM_NAMES.get(keysym, str(keysym))
            else:
                detail = str(event.detail) if kind != "motion" else ""
            self._events.append(InputEvent(kind, detail, int(event.root_x), int(event.root_y)))

    def events(self, kinds: tuple[str, ...] = ("press", "release", "key", "keyup")) -> list[InputEvent]:
        """Events received so far, of `kinds` (motion left out by default)."""
        self._drain()
        return [e for e in self._events if e.kind in kinds]

    def wait_for(self, count: int, kinds: tuple[str, ...] = ("press", "release", "key", "keyup"),
                 timeout_s: float = 10.0) -> list[InputEvent]:
        """Poll until at least `count` events of `kinds` arrived; returns them all."""
        return wait_until(lambda: len(self.events(kinds)) >= count and self.events(kinds), timeout_s,
                          f"{count} input events")

    def clear(self) -> None:
        """Forget the events received so far."""
        self._drain()
        self._events.clear()

    def __enter__(self) -> InputRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.window.destroy()
        self.conn.close()
