"""What an OSWorld setup step, getter or metric needs beyond an env pod and the URL cache.

Modules of `setup/`, `getters/` and `metrics/` may declare a module-level `NEEDS` dict: feature name
-> `Needs`, either a fixed set of requirement names or a function of the step / getter config (e.g.
`chrome_open_tabs` needs the internet only for `http(s)` URLs). `cua-rollout coverage` reports tasks
by requirement; a task whose features are all implemented is runnable, offline when it needs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.runner.osworld.offline import EXPLANATIONS as OFFLINE_EXPLANATIONS

INTERNET = "internet"
GOOGLE_DRIVE = "google_drive"
EASYOCR = "easyocr"

EXPLANATIONS: dict[str, str] = {
    INTERNET: "reads or opens a live web page: runs when the env has a network",
    GOOGLE_DRIVE: "needs Google Drive credentials (OSWorld's settings/googledrive): not available offline",
    EASYOCR: "OSWorld reads the text with easyocr, whose models are fetched from a hub at run time (never done "
             "here); this layer reads it with Tesseract (Debian tesseract-ocr), which may read a hard image "
             "differently",
    **OFFLINE_EXPLANATIONS,
}
"""Requirement name -> why a task with it cannot run on an offline machine."""

Needs = frozenset[str] | Callable[[dict[str, Any]], frozenset[str]]


def resolve(needs: Needs | None, config: dict[str, Any]) -> frozenset[str]:
    """The requirements of one step / getter / metric `config` (empty when `needs` is None)."""
    if needs is None:
        return frozenset()
    if callable(needs):
        return needs(config)
    return needs


def any_web_url(*keys: str) -> Callable[[dict[str, Any]], frozenset[str]]:
    """`Needs` of a config whose string or list-of-string values under `keys` are URLs: the internet
    when any of them is `http(s)://` (a `file://` or local path needs nothing)."""

    def needs(config: dict[str, Any]) -> frozenset[str]:
        for key in keys:
            value = config.get(key)
            values = value if isinstance(value, list) else [value]
            if any(isinstance(v, str) and v.lower().startswith(("http://", "https://")) for v in values):
                return frozenset({INTERNET})
        return frozenset()

    return needs
