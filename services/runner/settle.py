"""Waiting for the screen to settle after a step's actions, by comparing screenshots (any env flavor:
OSWorld's VM server has only `GET /screenshot`, which is all this needs; `GET /cursor_position`
is used when it answers, to ignore the mouse pointer drawn into each screenshot).

OSWorld waits a fixed 2 s after every action (`DesktopEnv.step(..., pause=2)`); a fast policy with no
wait types into the old window while a new one is still opening. Here a step ends when:
- the screen changed since the screenshot the step acted on and then stayed unchanged for `quiet_s`;
- or it did not change at all for `no_change_s` (the action had no visible effect, e.g. `press shift`);
- or `max_s` passed (a video, a spinner): the cap, OSWorld's fixed wait.
"Changed" ignores the mouse pointer, thin changes (a text caret: at most `caret_px` wide or high) and a
region that flips back to a state seen just before (a blinking block cursor).
The last frame grabbed is the screenshot of the next step, so settling costs no extra grab at the end.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image, ImageChops, ImageDraw

#: Pixels masked right of and below the pointer's hotspot (and `POINTER_MARGIN_PX` up/left): the arrow
#: our env draws is 13 x 21 px; 32 px covers the usual X cursor sizes.
POINTER_BOX_PX = 32
POINTER_MARGIN_PX = 4

Point = tuple[int, int]
Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class SettleConfig:
    """Seconds: `quiet_s` unchanged after a change, `no_change_s` with no change at all, `max_s` cap,
    `interval_s` pause between grabs; `caret_px`: changes at most this wide or high are a caret."""

    quiet_s: float = 0.5
    no_change_s: float = 1.0
    max_s: float = 2.0
    interval_s: float = 0.05
    caret_px: int = 4


@dataclass(frozen=True)
class Settled:
    """Outcome of one wait: the last frame (PNG bytes), how long it took (ms), frames grabbed, whether
    the screen changed, and whether the cap ended the wait (`capped`)."""

    png: bytes
    settle_ms: float
    frames: int
    changed: bool
    capped: bool


def decode(png: bytes) -> Image.Image:
    """RGB image of PNG bytes."""
    with Image.open(io.BytesIO(png)) as image:
        return image.convert("RGB")


def changed_box(a: Image.Image, b: Image.Image, pointers: tuple[Point | None, ...] = ()) -> Box | None:
    """Bounding box (left, top, right, bottom; pixels) of what differs between two frames of one
    size, with the pointer boxes at `pointers` masked; None when nothing else differs."""
    if a.size != b.size:
        return (0, 0, *b.size)
    diff = ImageChops.difference(a, b)
    if pointers:
        draw = ImageDraw.Draw(diff)
        for point in pointers:
            if point is not None:
                x, y = point
                draw.rectangle((x - POINTER_MARGIN_PX, y - POINTER_MARGIN_PX, x + POINTER_BOX_PX, y + POINTER_BOX_PX),
                               fill=(0, 0, 0))
    return diff.getbbox()


def is_significant(box: Box | None, caret_px: int) -> bool:
    """True for a change wider and higher than a caret (`caret_px` pixels)."""
    if box is None:
        return False
    left, top, right, bottom = box
    return right - left > caret_px and bottom - top > caret_px


class ChangeTracker:
    """Tells the changes of a stream of frames: a frame differs from the last state by more than a
    caret (`caret_px`) outside the pointer boxes, and is not a flip back to the state just before it
    (a blinking block cursor). Keeps the last two distinct states, newest last."""

    def __init__(self, first: Image.Image, caret_px: int) -> None:
        self.states = [first]
        self.caret_px = caret_px

    def _differs(self, a: Image.Image, b: Image.Image, pointers: tuple[Point | None, ...]) -> bool:
        return is_significant(changed_box(a, b, pointers), self.caret_px)

    @property
    def current(self) -> Image.Image:
        """The newest state."""
        return self.states[-1]

    def is_change(self, frame: Image.Image, pointers: tuple[Point | None, ...] = ()) -> bool:
        """True when `frame` is a change (see the class doc); the states follow it either way."""
        if not self._differs(self.states[-1], frame, pointers):
            return False
        if len(self.states) > 1 and not self._differs(self.states[-2], frame, pointers):
            self.states.reverse()  # back to the state before: a blink, not a change
            return False
        self.states = [self.states[-1], frame]
        return True


class ScreenSettler:
    """Waits for the screen to settle; `grab()` returns a PNG screenshot, `pointer()` the pointer's
    position in pixels (or None when the env cannot tell). `clock` / `sleep` are seconds-based."""

    def __init__(self, grab: Callable[[], bytes], pointer: Callable[[], Point | None], config: SettleConfig,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.grab = grab
        self.pointer = pointer
        self.config = config
        self.clock = clock
        self.sleep = sleep
        self.last_pointer: Point | None = None

    def first_frame(self, given: bytes | None = None) -> bytes:
        """The screenshot of the first step: `given` (the one the wait after setup ended on,
        `first_screen`), else a fresh grab. Also records where the pointer is, for the next `settle`;
        with settling off (`max_s` 0) there is none: no pointer request."""
        if self.config.max_s > 0:
            self.last_pointer = self.pointer()
        return given if given is not None else self.grab()

    def settle(self, before_png: bytes) -> Settled:
        """Wait after a step's actions; `before_png` is the screenshot the step acted on."""
        config = self.config
        start = self.clock()
        pointer_now = self.pointer()
        pointers = (self.last_pointer, pointer_now)
        self.last_pointer = pointer_now
        tracker = ChangeTracker(decode(before_png), config.caret_px)
        last_png = before_png
        changed = False
        last_change = start
        frames = 0
        while True:
            taken = self.clock()
            png = self.grab()
            frames += 1
            if png != last_png:
                if tracker.is_change(decode(png), pointers):
                    changed, last_change = True, taken
                last_png = png
            elapsed = taken - start
            if changed and taken - last_change >= config.quiet_s:
                return self._done(png, start, frames, changed, capped=False)
            if not changed and elapsed >= config.no_change_s:
                return self._done(png, start, frames, changed, capped=False)
            if self.clock() - start >= config.max_s:
                return self._done(png, start, frames, changed, capped=True)
            self.sleep(config.interval_s)

    def _done(self, png: bytes, start: float, frames: int, changed: bool, capped: bool) -> Settled:
        return Settled(png=png, settle_ms=(self.clock() - start) * 1000.0, frames=frames, changed=changed,
                       capped=capped)
