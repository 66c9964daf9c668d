"""common/data_urls.py: the URL of an image part, and the bytes of a base64 data URL."""

from __future__ import annotations

import pytest

from common.data_urls import image_data, image_part_url


@pytest.mark.parametrize(("part", "url"), [
    ({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}, "data:image/png;base64,AA=="),
    ({"type": "image_url", "image_url": {"url": "https://x.example/a.png"}}, "https://x.example/a.png"),
    ({"type": "image_url", "image_url": {"url": 3}}, None),
    ({"type": "image_url", "image_url": "data:image/png;base64,AA=="}, None),
    ({"type": "text", "text": "hi"}, None),
    ("a string", None),
])
def test_image_part_url(part: object, url: str | None) -> None:
    assert image_part_url(part) == url


def test_image_data_decodes_data_urls_only_and_names_bad_base64() -> None:
    assert image_data("DATA:IMAGE/PNG;BASE64,aGk=") == ("image/png", b"hi")
    assert image_data("https://x.example/a.png") is None and image_data("data:text/plain;base64,aGk=") is None
    with pytest.raises(ValueError, match="undecodable base64 data URL of 26 characters"):
        image_data("data:image/png;base64,a*k=")
