"""Images in OpenAI chat messages (the shape the runner's agents send and vLLM reads): the URL of an `image_url`
content part, and the bytes of an inline base64 `data:image/...` URL (RFC 2397)."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

_DATA_URL = re.compile(r"^data:(image/[A-Za-z0-9.+-]+);base64,", re.IGNORECASE)


def image_part_url(part: Any) -> str | None:
    """The URL of a content part `{"type": "image_url", "image_url": {"url": <str>}}`; None for any other part."""
    if not isinstance(part, dict) or part.get("type") != "image_url" or not isinstance(part.get("image_url"), dict):
        return None
    url = part["image_url"].get("url")
    return url if isinstance(url, str) else None


def image_data(url: str) -> tuple[str, bytes] | None:
    """(media type, lower case; the decoded bytes) of a base64 `data:image/<type>;base64,` URL; None when `url` is no
    such URL (an http URL, a file name). Raises: ValueError naming the problem when its base64 does not decode."""
    match = _DATA_URL.match(url)
    if match is None:
        return None
    try:
        return match.group(1).lower(), base64.b64decode(url[match.end():], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"undecodable base64 data URL of {len(url)} characters ({exc})") from exc
