"""services/scripted_policy/screens.py: which screenshot a reply acted on, and what counts as the screen changing."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image

from services.scripted_policy.screens import CHANGED_FRACTION, acted_on, changed, drawn, newest


def url(size: tuple[int, int] = (200, 100), box: tuple[int, int, int, int] | None = None) -> str:
    """A data URL of a grey PNG of `size` pixels with `box` painted black."""
    image = Image.new("RGB", size, (128, 128, 128))
    if box is not None:
        image.paste((0, 0, 0), box)
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def image_message(image_url: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": image_url}}]}


#: Pixels of the 200 x 100 test image that must differ for a change.
LIMIT = int(CHANGED_FRACTION * 200 * 100)


@pytest.mark.parametrize(("after", "expected"), [
    (url(), False),
    (url(box=(10, 10, 12, 30)), False),  # a caret
    (url(box=(10, 10, 10 + LIMIT // 10, 20)), False),  # a pointer, a clock's digits: at most the limit
    (url(box=(10, 10, 11 + LIMIT // 10, 20)), True),
    (url((100, 200)), True),
    ("data:image/png;base64,AA==", True),  # nothing to wait for
    ("https://example.invalid/x.png", True),
])
def test_changed_ignores_small_changes_and_counts_what_cannot_be_read_as_changed(after: str, expected: bool) -> None:
    assert changed(url(), after) is expected


def test_drawn_is_a_box_with_more_than_a_few_colours() -> None:
    image = Image.new("RGB", (200, 100), (255, 255, 255))
    for x in range(100, 200):
        image.putpixel((x, 50), (x, 255 - x, 0))  # many colours, right half only
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    page = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    assert drawn(page, (100, 0, 200, 100)) and not drawn(page, (0, 0, 100, 100))
    assert drawn("data:image/png;base64,AA==", (0, 0, 10, 10))  # nothing to wait for


def test_acted_on_is_the_last_image_before_the_reply_and_none_once_it_left_the_history() -> None:
    first, second, third = url(box=(0, 0, 9, 9)), url(box=(20, 0, 29, 9)), url(box=(40, 0, 49, 9))
    prompt: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": "task"}]}
    messages = [prompt, image_message(first), {"role": "assistant", "content": "a"}, image_message(second),
                {"role": "assistant", "content": "b"}, image_message(third)]
    assert (acted_on(messages, 0), acted_on(messages, 1), acted_on(messages, 2)) == (first, second, None)
    assert newest(messages) == third
    # the first screenshot dropped from the history:
    trimmed: list[dict[str, Any]] = [prompt, {"role": "assistant", "content": "a"}, image_message(second)]
    assert acted_on(trimmed, 0) is None and newest([prompt]) is None
