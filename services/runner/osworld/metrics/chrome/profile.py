"""OSWorld `desktop_env/evaluators/metrics/chrome.py`: metrics of Chrome's profile state (cookies,
history, chrome://flags experiments, font size) and of desktop shortcuts, on the values of the
profile getters (`cookie_data`, `history`, `enabled_experiments`, `chrome_font_size`,
`shortcuts_on_desktop`).

Raises EvalError where OSWorld raises: a rule of an unsupported type or without its keys, a getter
value of the wrong shape (e.g. None rows when the Cookies file could not be read).
"""

from __future__ import annotations

from typing import Any

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.urlcompare import compare_urls


@crashes_as_eval_error("is_cookie_deleted")
def is_cookie_deleted(cookie_data: Any, rule: dict[str, Any]) -> float:
    """OSWorld `is_cookie_deleted`: with `rule = {"type": "domains", "domains": [...]}`, 0.0 when a
    cookie row's `host_key` (column 1 of Chrome's `cookies` table) equals one of the domains by
    `compare_urls`, else 1.0."""
    if rule["type"] != "domains":
        raise TypeError(f"{rule['type']} not support yet!")
    hosts = [cookie[1] for cookie in cookie_data]
    for domain in rule["domains"]:
        if any(compare_urls(domain, host) for host in hosts):
            return 0.0
    return 1.0


@crashes_as_eval_error("check_history_deleted")
def check_history_deleted(history_data: Any, rule: dict[str, Any]) -> float:
    """OSWorld `check_history_deleted`: with `rule = {"type": "keywords", "keywords": [...]}`, 0.0
    when a keyword is a substring of a history row's URL (column 0), else 1.0."""
    if rule["type"] != "keywords":
        raise TypeError(f"{rule['type']} not support yet!")
    urls = [row[0] for row in history_data]
    for keyword in rule["keywords"]:
        if any(keyword in url for url in urls):
            return 0.0
    return 1.0


@crashes_as_eval_error("check_enabled_experiments")
def check_enabled_experiments(enabled_experiments: Any, rule: dict[str, Any]) -> float:
    """OSWorld `check_enabled_experiments`: the experiment names (each entry up to its `@`, e.g.
    `chrome-refresh-2023@2` -> `chrome-refresh-2023`) equal `rule["names"]` in order
    (`rule["type"] == "names"`)."""
    names = [experiment.split("@")[0] for experiment in enabled_experiments]
    if rule["type"] != "names":
        raise TypeError(f"{rule['type']} not support yet!")
    return 1.0 if names == rule["names"] else 0.0


@crashes_as_eval_error("check_font_size")
def check_font_size(font_size: Any, rule: dict[str, Any]) -> float:
    """OSWorld `check_font_size` on `webkit.webprefs` of Chrome's Preferences: `rule["type"]`
    `value` (`default_font_size == value`) or `range` (`min < default_font_size < max`, strict)."""
    size = font_size["default_font_size"]
    if rule["type"] == "value":
        return 1.0 if size == rule["value"] else 0.0
    if rule["type"] == "range":
        return 1.0 if rule["min"] < size < rule["max"] else 0.0
    raise TypeError(f"{rule['type']} not support yet!")


@crashes_as_eval_error("is_shortcut_on_desktop")
def is_shortcut_on_desktop(shortcuts: Any, rule: dict[str, Any]) -> float:
    """OSWorld `is_shortcut_on_desktop` on `{file name: .desktop file text}`: rule type `name`
    (a line `Name=<name>` ended by a newline) or `exec` (a line `Exec=<exec>`); other types raise."""
    kind = rule["type"]
    if kind not in ("name", "exec"):
        raise TypeError(f"{kind} not support yet!")
    for content in shortcuts.values():  # the rule's value is read only when there is a shortcut, as OSWorld
        if (f"Name={rule['name']}\n" if kind == "name" else f"Exec={rule['exec']}\n") in content:
            return 1.0
    return 0.0


METRICS: dict[str, Metric] = {
    "is_cookie_deleted": is_cookie_deleted,
    "check_history_deleted": check_history_deleted,
    "check_enabled_experiments": check_enabled_experiments,
    "check_font_size": check_font_size,
    "is_shortcut_on_desktop": is_shortcut_on_desktop,
}
