"""Runs in the agent oracle process: OSWorld's `tag_screenshot` on a base64 screenshot (its input and output
images are bytes, which the JSON protocol carries as base64)."""

from __future__ import annotations

import base64
from typing import Any


def tag(screenshot_b64: str, tree: str) -> dict[str, Any]:
    """OSWorld's set of marks: `{"marks": [[x, y, w, h], ...], "table": str, "png": base64}`."""
    from mm_agents.agent import tag_screenshot

    marks, _, tagged, table = tag_screenshot(base64.b64decode(screenshot_b64), tree, "ubuntu")
    return {"marks": marks, "table": table, "png": base64.b64encode(tagged).decode()}
