"""VLC metrics on its live state: what it is playing (its HTTP interface's `status.xml`, fetched by
the `vlc_playing_info` getter) and whether its window fills the screen.

Semantics of the functions of the same names in OSWorld `desktop_env/evaluators/metrics/vlc.py`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from xml.etree import ElementTree

from services.runner.osworld.crash import input_errors
from services.runner.osworld.metrics.base import given, given_path, score

_META = 'information/category[@name="meta"]/info[@name="{}"]'
FILE_FIELDS = tuple(_META.format(name) for name in ("filename", "title", "uri", "location", "name"))
"""Where `status.xml` may name the playing file, in the order OSWorld looks (first non-empty wins)."""
_STREAM = 'information/category[@name="Stream 0"]/info[@name="{}"]'
URL_FIELDS = (*(_META.format(name) for name in ("url", "URI", "location", "title", "filename")),
              *(_STREAM.format(name) for name in ("Codec", "Type", "Language")))
"""Where `status.xml` may name the playing stream's URL, in OSWorld's order."""


def _first_text(tree: ElementTree.Element, paths: tuple[str, ...]) -> str | None:
    for path in paths:
        element = tree.find(path)
        if element is not None and element.text:
            return element.text
    return None


def _file_matches(found: str, expected: str) -> bool:
    return os.path.basename(found) == expected or found.endswith(expected)


def _url_matches(found: str, expected: str) -> bool:
    if expected in found:
        return True
    try:  # OSWorld ignores URLs urllib cannot parse
        wanted = urlparse(expected)
        if found == os.path.basename(wanted.path):  # HLS: VLC shows just the playlist's file name
            return True
        if "://" in found:
            actual = urlparse(found)
            return wanted.netloc == actual.netloc and wanted.path in actual.path
    except ValueError:
        return False
    return False


def is_vlc_playing(actual_status_path: str | Path | None, rule: Any) -> float:
    """1.0 iff VLC's `status.xml` has `<state>playing</state>` and what it plays matches the rule:

    - `{"type": "file_name", "file_name": F}`: the first non-empty of `FILE_FIELDS` has base name
      F or ends with F;
    - `{"type": "url", "url": U}`: the first non-empty of `URL_FIELDS` contains U, or is U's file
      name, or is a URL on U's host whose path contains U's path.

    Anything else (not playing, no such field, another rule type) scores 0.0.
    Raises: EvalError for a missing / non-UTF-8 / malformed file, no `<state>`, a rule without `type`
    (or without `file_name` / `url` once playing).
    """
    with input_errors("is_vlc_playing", ElementTree.ParseError):
        status_path = given_path(actual_status_path, "actual_status_path")
        tree = ElementTree.fromstring(Path(status_path).read_bytes().decode("utf-8"))
        if given(tree.find("state"), "<state>").text != "playing":
            return 0.0
        kind = rule["type"]
        if kind == "file_name":
            found = _first_text(tree, FILE_FIELDS)
            return score(found is not None and _file_matches(found, rule["file_name"]))
        if kind == "url":
            expected = rule["url"]
            found = _first_text(tree, URL_FIELDS)
            return score(found is not None and _url_matches(found, expected))
    return 0.0


def is_vlc_fullscreen(actual_window_size: Any, screen_size: Any) -> float:
    """1.0 iff VLC's window size `{"width", "height"}` (pixels) equals the screen's; 0.0 when
    either is None (no VLC window).

    Raises: EvalError when a size lacks `width` / `height`.
    """
    if screen_size is None or actual_window_size is None:
        return 0.0
    with input_errors("is_vlc_fullscreen"):
        same = (actual_window_size["width"] == screen_size["width"]
                and actual_window_size["height"] == screen_size["height"])
    return score(same)
