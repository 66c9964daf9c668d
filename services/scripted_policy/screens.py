"""The screenshots of a chat request, for scripts that wait on the screen (`scripts.Script.conditions`): which
image each assistant reply acted on, whether two screenshots differ by more than a pointer, caret or clock, and
whether a box of a screenshot is drawn (`common.pixels.is_drawn`).

A request's images are its user messages' `image_url` parts with base64 `data:` URLs (UI-TARS sends the newest
few: `UITarsOptions.history_images`); a reply acted on the last image before it.
"""

from __future__ import annotations

import io
from typing import Any

from PIL import Image, ImageChops, UnidentifiedImageError

from common.data_urls import image_data, image_part_url
from common.pixels import Box, is_drawn

#: The screen changed when more than this fraction of its pixels differ (0.5 %: 10,368 of 1920 x 1080): the mouse
#: pointer moved (two 13 x 21 px arrows), a caret blinking or the top bar's clock ticking stay far below; a menu,
#: a dialog or a page drawn are far above.
CHANGED_FRACTION = 0.005


def image_urls(message: dict[str, Any]) -> list[str]:
    """The `image_url` URLs of a message's content parts, in order (none when its content is a string)."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [url for url in map(image_part_url, content) if url is not None]


def acted_on(messages: list[dict[str, Any]], reply_index: int) -> str | None:
    """The URL of the last image before the `reply_index`-th assistant message (0-based), or None when that
    message has none before it in the request (its screenshot left the history) or there is no such message."""
    image: str | None = None
    replies = 0
    for message in messages:
        if message.get("role") == "assistant":
            if replies == reply_index:
                return image
            replies += 1
        elif urls := image_urls(message):
            image = urls[-1]
    return None


def newest(messages: list[dict[str, Any]]) -> str | None:
    """The URL of the request's newest image, or None."""
    urls = [url for m in messages if m.get("role") != "assistant" for url in image_urls(m)]
    return urls[-1] if urls else None


def changed(before: str, after: str) -> bool:
    """True when more than `CHANGED_FRACTION` of the pixels of screenshot `after` differ from `before`. Both are
    `data:image/...;base64,` URLs; one that is no decodable image counts as changed (nothing to wait for)."""
    if before == after:
        return False
    try:
        first, second = decode(before), decode(after)
    except ValueError:
        return True
    if first.size != second.size:
        return True
    red, green, blue = ImageChops.difference(first, second).split()
    differing = ImageChops.lighter(ImageChops.lighter(red, green), blue)  # 0 where no channel differs
    same = differing.histogram()[0]
    return first.width * first.height - same > CHANGED_FRACTION * first.width * first.height


def drawn(url: str, box: Box) -> bool:
    """True when `box` (left, top, right, bottom, pixels) of the screenshot `url` is drawn (`is_drawn`); a URL
    that is no decodable image counts as drawn (nothing to wait for)."""
    try:
        return is_drawn(decode(url), box)
    except ValueError:
        return True


def decode(url: str) -> Image.Image:
    """The RGB image of a `data:image/...;base64,` URL. Raises: ValueError when it is none."""
    image = image_data(url)
    if image is None:
        raise ValueError("not a base64 data URL of an image")
    try:
        with Image.open(io.BytesIO(image[1])) as opened:
            return opened.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"not an image: {exc}") from exc
