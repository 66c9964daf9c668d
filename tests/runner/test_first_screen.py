"""The wait before the first observation: its rules on synthetic frames and window lists with a simulated
clock, and the real thing on a real desktop (an app launched late by the setup is on the first screen)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image, ImageDraw

from common.env_client import DesktopEnvClient
from common.pixels import is_drawn
from common.task import SetupStep
from services.desktop_env.launcher import LocalEnvLauncher
from services.runner.first_screen import FirstScreenConfig, FirstScreenWaiter, window_ids
from services.runner.osworld import SetupContext, run_setup
from services.runner.settle import decode
from services.runner.steps import pointer_of

CONFIG = FirstScreenConfig(max_s=60.0, quiet_s=1.0, no_change_s=2.0, drawn_s=5.0, interval_s=0.1)
POLL_S = 0.2  # simulated time one poll takes


def _png(window: tuple[int, int, int, int] | None = None, painted: bool = True, tick: int = 0) -> bytes:
    """A 400x300 black screen; `window` a white rectangle, with coloured stripes when `painted` (and a
    moving stripe for `tick`, a playing video)."""
    image = Image.new("RGB", (400, 300), (0, 0, 0))
    draw = ImageDraw.Draw(image)
    if window:
        draw.rectangle(window, fill=(255, 255, 255))
        if painted:
            left, top, right, _ = window
            for i in range(40):
                draw.line((left, top + 2 * i, right, top + 2 * i), fill=(6 * i, 255 - 6 * i, (37 * i) % 256))
        if tick:
            draw.rectangle((window[0] + 10 + tick % 50, 200, window[0] + 30 + tick % 50, 220), fill=(9, 9, 9))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


class ScriptedScreen:
    """An env whose screen and windows follow `timeline(t)` -> (png, windows) of simulated time t."""

    def __init__(self, timeline: Any, listing: bool = True) -> None:
        self.timeline = timeline
        self.listing = listing
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def screenshot(self) -> bytes:
        self.now += POLL_S
        return self.timeline(self.now)[0]

    def windows(self) -> list[dict[str, Any]] | None:
        return self.timeline(self.now)[1] if self.listing else None


def _window(wid: int, box: tuple[int, int, int, int], kind: str = "normal") -> dict[str, Any]:
    left, top, right, bottom = box
    return {"wid": wid, "title": f"w{wid}", "wm_class": "app.App", "x": left, "y": top, "width": right - left,
            "height": bottom - top, "kind": kind}


def _wait(screen: ScriptedScreen, steps: list[str], before: frozenset[int] | None = frozenset()) -> Any:
    waiter = FirstScreenWaiter(screen, lambda: None, CONFIG, clock=screen.clock, sleep=screen.sleep)
    return waiter.wait([SetupStep(type=t, parameters={}) for t in steps], before)


BOX = (50, 40, 350, 260)


def test_a_launch_waits_for_its_window_to_appear_and_be_drawn() -> None:
    def timeline(t: float) -> tuple[bytes, list[dict[str, Any]]]:
        if t < 6:  # starting: a black screen
            return _png(), []
        if t < 8:  # mapped but not painted yet
            return _png(BOX, painted=False), [_window(7, BOX)]
        return _png(BOX), [_window(7, BOX)]

    first = _wait(ScriptedScreen(timeline), ["launch"])
    assert first.cause == "windows"
    assert 9.0 <= first.wait_ms / 1000 <= 9.6  # drawn at 8 s, then 1 s unchanged
    assert [w["wid"] for w in first.windows] == [7] and is_drawn(decode(first.png), BOX)


def _wallpaper(window: tuple[int, int, int, int] | None = None) -> bytes:
    """A 400x300 gradient (many colours, like a wallpaper), with a painted window over it."""
    image = Image.new("RGB", (400, 300))
    for y in range(300):
        ImageDraw.Draw(image).line((0, y, 399, y), fill=(y // 2, 40, 255 - y // 2))
    if window:
        image.paste(decode(_png(window)).crop(window), window[:2])
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_a_window_listed_but_not_composited_yet_does_not_count_while_the_wallpaper_shows_through() -> None:
    def timeline(t: float) -> tuple[bytes, list[dict[str, Any]]]:
        return (_wallpaper(BOX) if t >= 5 else _wallpaper()), [_window(7, BOX)] if t >= 2 else []

    screen = ScriptedScreen(timeline)
    waiter = FirstScreenWaiter(screen, lambda: None, CONFIG, clock=screen.clock, sleep=screen.sleep)
    first = waiter.wait([SetupStep(type="launch", parameters={})], frozenset(), _wallpaper())
    assert first.cause == "windows" and 6.0 <= first.wait_ms / 1000 <= 6.6  # shown at 5 s, then 1 s unchanged


def test_a_mostly_black_window_on_a_black_screen_counts_once_drawn() -> None:
    """VLC without a file on openbox: a black video area under a drawn toolbar, on a black root window."""
    def mostly_black() -> bytes:
        image = decode(_png())
        toolbar = decode(_png((BOX[0], BOX[1], BOX[2], BOX[1] + 30))).crop((BOX[0], BOX[1], BOX[2], BOX[1] + 30))
        image.paste(toolbar, BOX[:2])
        out = io.BytesIO()
        image.save(out, format="PNG")
        return out.getvalue()

    screen = ScriptedScreen(lambda t: (mostly_black(), [_window(7, BOX)]) if t >= 2 else (_png(), []))
    waiter = FirstScreenWaiter(screen, lambda: None, CONFIG, clock=screen.clock, sleep=screen.sleep)
    first = waiter.wait([SetupStep(type="launch", parameters={})], frozenset(), _png())
    assert first.cause == "windows" and first.wait_ms / 1000 <= 4.0  # shown at 2 s, then 1 s unchanged


def test_a_splash_screen_is_not_the_app_and_a_playing_video_ends_the_wait_once_drawn_long_enough() -> None:
    def timeline(t: float) -> tuple[bytes, list[dict[str, Any]]]:
        if t < 3:
            return _png((150, 100, 250, 200)), [_window(3, (150, 100, 250, 200), kind="splash")]
        return _png(BOX, tick=int(t * 10)), [_window(8, BOX)]  # the screen never rests

    first = _wait(ScriptedScreen(timeline), ["open"])
    assert first.cause == "windows" and [w["wid"] for w in first.windows] == [8]
    assert 8.0 <= first.wait_ms / 1000 <= 8.6  # drawn from 3 s, then `drawn_s`


def test_a_launch_that_never_shows_a_window_ends_at_the_cap_and_windows_seen_before_do_not_count() -> None:
    first = _wait(ScriptedScreen(lambda t: (_png(BOX), [_window(1, BOX)])), ["launch"], before=frozenset({1}))
    assert first.cause == "capped" and first.windows == []
    assert CONFIG.max_s <= first.wait_ms / 1000 <= CONFIG.max_s + 0.5


def test_execute_only_setups_wait_for_a_quiet_screen_and_steps_that_start_nothing_take_no_wait() -> None:
    unchanged = _wait(ScriptedScreen(lambda t: (_png(), [])), ["execute"])
    assert unchanged.cause == "settled" and 2.0 <= unchanged.wait_ms / 1000 <= 2.5
    late = _wait(ScriptedScreen(lambda t: (_png(BOX) if t > 1.5 else _png(), [])), ["execute", "activate_window"])
    assert late.cause == "settled" and 2.5 <= late.wait_ms / 1000 <= 3.0  # changed at 1.6 s, then 1 s quiet
    none = _wait(ScriptedScreen(lambda t: (_png(), [])), ["download", "sleep"])
    assert (none.cause, none.wait_ms, none.png) == ("none", 0.0, None)


def test_an_env_without_a_window_list_waits_for_a_quiet_screen() -> None:
    first = _wait(ScriptedScreen(lambda t: (_png(BOX) if t > 1 else _png(), []), listing=False), ["launch"],
                  before=None)
    assert first.cause == "settled" and first.windows is None


# -- on a real desktop -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DesktopEnvClient]:
    with LocalEnvLauncher(count=1, root_dir=tmp_path_factory.mktemp("envs"), shell="gnome") as launcher:
        client = DesktopEnvClient(launcher.urls[0])
        yield client
        client.close()


def test_the_first_screen_shows_an_app_the_setup_launched_late(env: DesktopEnvClient,
                                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    env.reset()
    steps = [SetupStep(type="launch", parameters={"command": "sleep 2; exec mousepad", "shell": True})]
    before = window_ids(env)
    assert before is not None
    run_setup(steps, env, SetupContext(client_password="password", screen=env.screen_size(),
                                       cache_dir=tmp_path_factory.mktemp("cache")))
    first = FirstScreenWaiter(env, lambda: pointer_of(env), FirstScreenConfig(max_s=60.0)).wait(steps, before)
    assert first.cause == "windows", first
    assert first.png is not None and first.windows
    (window,) = [w for w in first.windows if "mousepad" in w["wm_class"].lower()]
    box = (window["x"], window["y"], window["x"] + window["width"], window["y"] + window["height"])
    assert is_drawn(decode(first.png), box)
