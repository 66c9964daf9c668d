"""Wall thumbnails: scaled screenshots with the step's action drawn at its scaled screen pixels."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from services.task_producer.live.thumbs import MARKER_RGB, WIDTH, ThumbnailCache, thumbnail
from services.task_producer.ui.trajectory_view import Marker
from tests.task_producer.live.helpers import screenshot


def _near(pixel: tuple[int, ...], rgb: tuple[int, int, int], tolerance: int = 60) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, rgb, strict=False))


def test_thumbnail_is_scaled_and_marks_the_click_and_the_drag() -> None:
    click = Marker(kind="click", x=960, y=540, label="click")
    drag = Marker(kind="drag", x=100, y=100, x2=1800, y2=100, label="drag")
    data = thumbnail(screenshot(1920, 1080), [click, drag])
    image = Image.open(io.BytesIO(data))
    assert image.format == "JPEG" and image.size == (WIDTH, 270)
    scale = WIDTH / 1920
    # the ring around the click (radius 9 px) and the middle of the drag line are red; the click point itself is not
    assert _near(image.getpixel((round(960 * scale) + 8, round(540 * scale))), MARKER_RGB)
    assert _near(image.getpixel((WIDTH // 2, round(100 * scale))), MARKER_RGB)
    assert _near(image.getpixel((round(960 * scale), round(540 * scale))), (40, 40, 40))


def test_cache_loads_each_screenshot_once_and_rejects_what_is_not_an_image() -> None:
    loads: list[str] = []

    def load(shot: str) -> bytes:
        loads.append(shot)
        return screenshot(200, 100)

    cache = ThumbnailCache(size=2)
    first = cache.get("a", [], load)
    assert cache.get("a", [], load) == first and loads == ["a"]
    assert Image.open(io.BytesIO(first)).size == (200, 100)  # never enlarged
    with pytest.raises(ValueError, match="not a readable image"):
        cache.get("b", [], lambda _: b"not a png")
