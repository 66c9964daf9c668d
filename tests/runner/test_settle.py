"""Screen settling after actions: the frame-comparison rules on synthetic frames with a simulated clock,
and the real thing on a real Xvfb desktop (a terminal opened by ctrl+alt+t is on the settled frame).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from common.env_client import DesktopEnvClient
from services.desktop_env.launcher import LocalEnvLauncher
from services.runner.settle import (
    Point,
    ScreenSettler,
    SettleConfig,
    changed_box,
    decode,
    is_significant,
)
from services.runner.steps import pointer_of

CONFIG = SettleConfig(quiet_s=0.5, no_change_s=1.0, max_s=2.0, interval_s=0.05)
FRAME_S = 0.1  # simulated time one grab takes


def frame(*rects: tuple[int, int, int, int], pointer: Point | None = None) -> bytes:
    """A 400x300 PNG: grey, with white rectangles (left, top, right, bottom) and an arrow at `pointer`."""
    image = Image.new("RGB", (400, 300), (90, 90, 90))
    draw = ImageDraw.Draw(image)
    for rect in rects:
        draw.rectangle(rect, fill=(255, 255, 255))
    if pointer:
        x, y = pointer
        draw.polygon([(x, y), (x, y + 17), (x + 12, y + 12)], fill="white", outline="black")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


class Screen:
    """Simulated display: `frames(t)` gives the PNG at time t; grabbing takes FRAME_S seconds."""

    def __init__(self, frames: Callable[[float], bytes], pointer: Point | None = None) -> None:
        self.now = 0.0
        self.frames = frames
        self.pointer_at = pointer
        self.grabs = 0

    def grab(self) -> bytes:
        png = self.frames(self.now)
        self.now += FRAME_S
        self.grabs += 1
        return png

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def settler(self, last_pointer: Point | None = None) -> ScreenSettler:
        settler = ScreenSettler(self.grab, lambda: self.pointer_at, CONFIG, clock=lambda: self.now, sleep=self.sleep)
        settler.last_pointer = last_pointer
        return settler


BEFORE = frame((10, 10, 60, 40))
WINDOW = frame((10, 10, 60, 40), (100, 50, 350, 250))


def test_an_action_without_visible_effect_waits_no_change_s() -> None:
    screen = Screen(lambda t: BEFORE)
    settled = screen.settler().settle(BEFORE)
    assert not settled.changed and not settled.capped
    assert CONFIG.no_change_s * 1000 <= settled.settle_ms < CONFIG.max_s * 1000


def test_a_window_that_appears_late_is_waited_for_and_then_quiet_s() -> None:
    screen = Screen(lambda t: WINDOW if t >= 0.7 else BEFORE)  # opens 0.7 s after the action
    settled = screen.settler().settle(BEFORE)
    assert settled.changed and not settled.capped and settled.png == WINDOW
    assert settled.settle_ms >= (0.7 + CONFIG.quiet_s) * 1000


def test_a_screen_that_keeps_changing_is_capped() -> None:
    screen = Screen(lambda t: frame((10, 10, 60 + int(t * 100), 40)))  # a growing progress bar
    settled = screen.settler().settle(BEFORE)
    assert settled.changed and settled.capped
    assert settled.settle_ms >= CONFIG.max_s * 1000


def test_a_blinking_caret_is_no_change() -> None:
    caret_on = frame((10, 10, 60, 40), (200, 100, 201, 120))  # 2 x 21 px
    screen = Screen(lambda t: caret_on if int(t / 0.3) % 2 else BEFORE)
    settled = screen.settler().settle(BEFORE)
    assert not settled.changed and not settled.capped  # ended by no_change_s, not the cap


def test_a_blinking_block_cursor_after_a_change_still_settles() -> None:
    typed = frame((10, 10, 60, 40), (100, 100, 180, 116))
    typed_cursor = frame((10, 10, 60, 40), (100, 100, 180, 116), (184, 100, 192, 116))  # 9 x 17 px block
    screen = Screen(lambda t: typed_cursor if int(t / 0.3) % 2 else typed)  # blinks every 0.3 s
    settled = screen.settler().settle(BEFORE)
    assert settled.changed and not settled.capped


def test_the_mouse_pointer_moving_is_no_change() -> None:
    screen = Screen(lambda t: frame((10, 10, 60, 40), pointer=(300, 200)), pointer=(300, 200))
    settled = screen.settler(last_pointer=(20, 250)).settle(frame((10, 10, 60, 40), pointer=(20, 250)))
    assert not settled.changed


def test_first_frame_asks_for_the_pointer_only_when_settling_is_on() -> None:
    asked: list[int] = []

    def pointer() -> Point:
        asked.append(1)
        return (5, 5)

    png = frame()
    on = ScreenSettler(lambda: png, pointer, CONFIG)
    assert on.first_frame() == png and on.last_pointer == (5, 5) and len(asked) == 1
    off = ScreenSettler(lambda: png, pointer, SettleConfig(max_s=0.0))
    assert off.first_frame() == png and off.last_pointer is None and len(asked) == 1  # no request when off


def test_changed_box_masks_pointers_and_flags_only_wide_and_high_changes() -> None:
    a, b = decode(BEFORE), decode(WINDOW)
    assert changed_box(a, a) is None
    assert changed_box(a, b) == (100, 50, 351, 251)
    assert is_significant(changed_box(a, b), caret_px=4)
    assert not is_significant((5, 5, 7, 200), caret_px=4) and not is_significant((5, 5, 300, 8), caret_px=4)
    pointed = decode(frame((10, 10, 60, 40), pointer=(200, 150)))
    assert changed_box(a, pointed, ((200, 150),)) is None


# -- on a real desktop -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DesktopEnvClient]:
    with LocalEnvLauncher(count=1, root_dir=tmp_path_factory.mktemp("envs")) as launcher:
        client = DesktopEnvClient(launcher.urls[0])
        yield client
        client.close()


def _settler(env: DesktopEnvClient) -> ScreenSettler:
    return ScreenSettler(env.screenshot, lambda: pointer_of(env), SettleConfig())


def test_settled_frame_shows_the_terminal_that_ctrl_alt_t_opened(env: DesktopEnvClient, tmp_path: Path) -> None:
    env.reset()
    settler = _settler(env)
    before = settler.first_frame()
    assert env.execute(["python", "-c", "import pyautogui; pyautogui.hotkey('ctrl', 'alt', 't')"]).returncode == 0
    settled = settler.settle(before)
    assert settled.changed and not settled.capped
    assert "Terminal" in (env.execute(["wmctrl", "-l"]).output or "")  # mapped before the settle ended
    box = changed_box(decode(before), decode(settled.png))
    assert box is not None and box[2] - box[0] > 200 and box[3] - box[1] > 100  # a window, not a caret


def test_a_key_without_effect_settles_unchanged(env: DesktopEnvClient) -> None:
    env.reset()
    settler = _settler(env)
    before = settler.first_frame()
    assert env.execute(["python", "-c", "import pyautogui; pyautogui.press('shift')"]).returncode == 0
    settled = settler.settle(before)
    assert not settled.changed and not settled.capped
