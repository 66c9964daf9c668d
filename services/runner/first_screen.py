"""The first observation of an episode: after the task's setup, wait until what it started shows.

OSWorld's harness sleeps 60 s after `env.reset(task_config)` before its first observation
(`lib_run_single.run_single_example`: `time.sleep(60)`), so an agent there sees the app the setup
launched; grabbing at once shows a black screen while Chrome or GIMP is still starting. Here the wait
ends as soon as (polled every `interval_s`; "new window": a window not listed before the setup ran,
of kind `normal` or `dialog`, so not a splash screen, menu or tooltip):

- `windows`: the setup has a `launch` or `open` step, a new window is there, the largest new window
  (the app's main window, not a bubble or a tool window beside it) is drawn in the screenshot
  (`common.pixels.is_drawn` over its area: a mapped but unpainted window is one flat colour) and shows
  on it (most of its area differs from the screen before the setup: a compositor shows the wallpaper
  there until the window's first frame), and the
  screen (and the set of new windows) then stayed unchanged for `quiet_s`, or the window has been
  drawn for `drawn_s` (a playing video, a spinner: the screen never rests);
- `settled`: the setup has only `execute` steps (which may start an app: `gnome-terminal`, a
  ctrl+alt+t pressed by pyautogui): the largest new window (if any) drawn, and the screen unchanged
  for `quiet_s` after its last change, or for `no_change_s` when it never changed (or drawn for `drawn_s`);
- `capped`: `max_s` (OSWorld's 60 s) passed first (e.g. a `launch` of a program that never opens a
  window: as long as OSWorld always waits).
A setup with none of these steps takes no wait (`none`). An env that cannot list its windows (OSWorld's
VM server has no `/windows`) gets the `settled` rule whatever its steps.
"Unchanged" ignores the pointer, a caret and a blinking cursor (`settle.ChangeTracker`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from PIL import Image, ImageChops

from common.pixels import is_drawn
from common.task import SetupStep
from services.runner.settle import ChangeTracker, Point, decode

#: Setup steps that start an app whose window the agent should see first.
LAUNCH_STEPS = frozenset({"launch", "open"})
#: Setup steps that may start one (a shell command, pyautogui keys).
EXECUTE_STEPS = frozenset({"execute", "command"})
#: EWMH kinds (`/windows` `kind`) of the windows an app shows as its own.
APP_WINDOW_KINDS = frozenset({"normal", "dialog"})

CAUSES = ("none", "windows", "settled", "capped")
"""Why the wait ended (`StepTimings.first_screen_cause`), see the module doc."""


class ScreenEnv(Protocol):
    """What the wait uses of an env (`common.env_client.DesktopEnvClient`)."""

    def screenshot(self) -> bytes:
        """PNG of the screen."""
        ...

    def windows(self) -> list[dict[str, Any]] | None:
        """The managed windows (`GET /windows`), None when the env cannot list them."""
        ...


@dataclass(frozen=True)
class FirstScreenConfig:
    """Seconds: `max_s` the cap (0: no wait at all), `quiet_s` unchanged after a change, `no_change_s`
    unchanged when nothing changed, `drawn_s` the new windows drawn while the screen still changes,
    `interval_s` between polls; `caret_px` as `settle.SettleConfig`."""

    max_s: float = 60.0
    quiet_s: float = 1.0
    no_change_s: float = 2.0
    drawn_s: float = 5.0
    interval_s: float = 0.1
    caret_px: int = 4


@dataclass(frozen=True)
class FirstScreen:
    """The outcome of the wait: the last screenshot (PNG; None when there was no wait), the wait (ms),
    its cause (`CAUSES`), and the new windows on that screenshot (`/windows` entries; None when the
    env cannot list them)."""

    png: bytes | None
    wait_ms: float
    cause: str
    windows: list[dict[str, Any]] | None


def needs_wait(steps: Sequence[SetupStep]) -> bool:
    """True when `steps` may start an app (a `launch`, `open` or `execute` step)."""
    return bool({step.type for step in steps} & (LAUNCH_STEPS | EXECUTE_STEPS))


def window_ids(env: ScreenEnv) -> frozenset[int] | None:
    """Ids of the env's windows now (before the setup), None when it cannot list them."""
    windows = env.windows()
    return None if windows is None else frozenset(int(w["wid"]) for w in windows)


def _box(window: dict[str, Any]) -> tuple[int, int, int, int]:
    x, y = int(window["x"]), int(window["y"])
    return x, y, x + int(window["width"]), y + int(window["height"])


#: Share of a window's pixels that must differ from the screen before the setup for it to show.
SHOWN_FRACTION = 0.5


def shown(frame: Image.Image, baseline: Image.Image | None, box: tuple[int, int, int, int]) -> bool:
    """True when `box` of `frame` is drawn and, where a `baseline` screen of the same size was drawn there too
    (a compositor's wallpaper), differs from it on at least `SHOWN_FRACTION` of its pixels. Over a flat
    baseline (openbox's black root window) being drawn is enough: a window that is mostly black (VLC without
    a file) differs from it on few pixels."""
    if not is_drawn(frame, box):
        return False
    if baseline is None or baseline.size != frame.size or not is_drawn(baseline, box):
        return True
    left, top, right, bottom = box
    clipped = (max(left, 0), max(top, 0), min(right, frame.width), min(bottom, frame.height))
    diff = ImageChops.difference(frame.crop(clipped), baseline.crop(clipped)).convert("L")
    histogram = diff.histogram()
    total = sum(histogram)
    return total > 0 and (total - histogram[0]) / total >= SHOWN_FRACTION


class FirstScreenWaiter:
    """Waits after a setup (see the module doc). `pointer()` gives the pointer's position in pixels
    (or None); `clock` / `sleep` are seconds-based."""

    def __init__(self, env: ScreenEnv, pointer: Callable[[], Point | None], config: FirstScreenConfig,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.env = env
        self.pointer = pointer
        self.config = config
        self.clock = clock
        self.sleep = sleep

    def wait(self, steps: Sequence[SetupStep], before: frozenset[int] | None,
             baseline_png: bytes | None = None) -> FirstScreen:
        """Wait after `steps` ran; `before`: `window_ids` taken before they ran, `baseline_png` the screen then
        (None: windows need only be drawn). Raises: common.env_client.EnvError when the env fails."""
        types = {step.type for step in steps}
        if self.config.max_s <= 0 or not types & (LAUNCH_STEPS | EXECUTE_STEPS):
            return FirstScreen(png=None, wait_ms=0.0, cause="none", windows=None)
        expect_window = before is not None and bool(types & LAUNCH_STEPS)
        config = self.config
        start = self.clock()
        tracker: ChangeTracker | None = None
        last_change, changed = start, False
        seen: frozenset[int] = frozenset()
        last_pointer: Point | None = None
        drawn_since: float | None = None
        last_png, frame = b"", None
        baseline = decode(baseline_png) if baseline_png else None
        while True:
            now = self.clock()
            png = self.env.screenshot()
            if png != last_png or frame is None:  # a screen that did not change is not decoded again
                last_png, frame = png, decode(png)
            listed = self.env.windows() if before is not None else None
            new = [w for w in listed or [] if int(w["wid"]) not in (before or ())
                   and str(w.get("kind", "normal")) in APP_WINDOW_KINDS]
            ids = frozenset(int(w["wid"]) for w in new)
            pointer = self.pointer()
            if tracker is None:
                tracker = ChangeTracker(frame, config.caret_px)
            elif tracker.is_change(frame, (last_pointer, pointer)) or ids != seen:
                changed, last_change = True, now
            seen, last_pointer = ids, pointer
            quiet = now - last_change
            main = max(new, key=lambda w: int(w["width"]) * int(w["height"]), default=None)
            drawn = shown(frame, baseline, _box(main)) if main is not None else not expect_window
            drawn_since = (drawn_since if drawn_since is not None else now) if drawn else None
            rested = quiet >= (config.quiet_s if changed or expect_window else config.no_change_s)
            ready = drawn and (rested or (drawn_since is not None and now - drawn_since >= config.drawn_s))
            if ready or now - start >= config.max_s:
                cause = ("windows" if expect_window else "settled") if ready else "capped"
                return FirstScreen(png=png, wait_ms=(self.clock() - start) * 1000.0, cause=cause,
                                   windows=new if listed is not None else None)
            self.sleep(config.interval_s)
