"""OSWorld `desktop_env/evaluators/metrics/chrome.py`: metrics of the browser's tabs, URLs, bookmarks,
extensions and page content (values from the Chrome getters and `rule`s).

Every metric returns 1.0 / 0.0 (OSWorld returns 1 / 0 or 1. / 0.: the same numbers) and raises
EvalError where OSWorld's function raises (a rule without its keys, an unsupported rule type).
"""

from __future__ import annotations

import re
from itertools import product
from typing import Any
from urllib.parse import urlparse, urlunparse

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.urlcompare import are_lists_equal, compare_urls


def _tab_url(active_tab_info: Any) -> Any:
    """The URL of an `active_tab_info` value: its `url` for a dict (None when absent), else itself."""
    return active_tab_info.get("url", None) if isinstance(active_tab_info, dict) else active_tab_info


@crashes_as_eval_error("is_expected_active_tab")
def is_expected_active_tab(active_tab_info: Any, rule: dict[str, Any]) -> float:
    """OSWorld `is_expected_active_tab`: with `rule = {"type": "url", "url": U}`, 1.0 when the active
    tab's URL (a dict's `url`, or the value itself) equals U by `compare_urls`; 0.0 for an empty value
    or another rule type."""
    if not active_tab_info:
        return 0.0
    if rule["type"] != "url":
        return 0.0
    return 1.0 if compare_urls(rule["url"], _tab_url(active_tab_info)) else 0.0


def _strip_query(url: Any) -> Any:
    return urlunparse(urlparse(url)._replace(query=""))


@crashes_as_eval_error("is_expected_active_tab_approximate")
def is_expected_active_tab_approximate(active_tab_info: Any, rule: dict[str, Any]) -> float:
    """OSWorld `is_expected_active_tab_approximate`: as `is_expected_active_tab` but the URLs are
    compared as strings with their query removed (no other normalization)."""
    if not active_tab_info:
        return 0.0
    if rule["type"] != "url":
        return 0.0
    return 1.0 if _strip_query(rule["url"]) == _strip_query(_tab_url(active_tab_info)) else 0.0


@crashes_as_eval_error("is_expected_url_pattern_match")
def is_expected_url_pattern_match(result: Any, rules: dict[str, Any]) -> float:
    """OSWorld `is_expected_url_pattern_match`: 1.0 when every regex of `rules["expected"]` is found
    (`re.search`) in the URL (`result` a URL string or a dict with `url`); 0.0 for an empty or other
    value."""
    if not result:
        return 0.0
    if isinstance(result, str):
        url = result
    elif isinstance(result, dict) and "url" in result:
        url = result["url"]
    else:
        return 0.0
    for pattern in rules["expected"]:
        if not re.search(pattern, url):
            return 0.0
    return 1.0


@crashes_as_eval_error("is_expected_installed_extensions")
def is_expected_installed_extensions(installed_extensions: Any, expected: dict[str, Any]) -> float:
    """OSWorld `is_expected_installed_extensions`: 1.0 when the names of `expected["expected"]` are
    a subset of `installed_extensions`; 0.0 when nothing is installed."""
    if not installed_extensions:
        return 0.0
    return 1.0 if set(expected["expected"]).issubset(set(installed_extensions)) else 0.0


@crashes_as_eval_error("is_expected_tabs")
def is_expected_tabs(open_tabs: Any, rule: dict[str, Any]) -> float:
    """OSWorld `is_expected_tabs`: with `rule = {"type": "url", "urls": [...]}`, 1.0 when the open
    tabs' URLs and the rule's have the same length and each rule URL matches an open tab
    (`are_lists_equal` with `compare_urls`); 0.0 for no tabs or another rule type."""
    if not open_tabs:
        return 0.0
    if rule["type"] != "url":
        return 0.0
    actual = [tab["url"] for tab in open_tabs]
    return 1.0 if are_lists_equal(rule["urls"], actual, compare_urls) else 0.0


def _bar_children(bookmarks: Any, kind: str) -> list[dict[str, Any]]:
    return [item for item in bookmarks["bookmark_bar"]["children"] if item["type"] == kind]


@crashes_as_eval_error("is_expected_bookmarks")
def is_expected_bookmarks(bookmarks: Any, rule: dict[str, Any]) -> float:
    """OSWorld `is_expected_bookmarks` on the `roots` of Chrome's Bookmarks file. Rule types:
    `bookmark_bar_folders_names` (set of the bar's folder names == `names`),
    `bookmark_bar_websites_urls` (set of the bar's URLs == `urls`), `liked_authors_websites_urls`
    (the bar's folder "Liked Authors" holds exactly one URL choice of each `urls` entry, an entry
    being a URL or a list of alternatives). 0.0 for no bookmarks; EvalError for another type."""
    if not bookmarks:
        return 0.0
    kind = rule["type"]
    if kind == "bookmark_bar_folders_names":
        return 1.0 if {item["name"] for item in _bar_children(bookmarks, "folder")} == set(rule["names"]) else 0.0
    if kind == "bookmark_bar_websites_urls":
        return 1.0 if {item["url"] for item in _bar_children(bookmarks, "url")} == set(rule["urls"]) else 0.0
    if kind == "liked_authors_websites_urls":
        folder = next((item for item in _bar_children(bookmarks, "folder") if item["name"] == "Liked Authors"), None)
        if folder is None:
            return 0.0
        liked = {item["url"] for item in folder["children"] if item["type"] == "url"}
        choices = [[url] if isinstance(url, str) else url for url in rule["urls"]]
        return 1.0 if any(set(combination) == liked for combination in product(*choices)) else 0.0
    raise TypeError(f"{kind} not support yet!")


@crashes_as_eval_error("is_expected_search_query")
def is_expected_search_query(active_tab_info: Any, rules: dict[str, Any]) -> float:
    """OSWorld `is_expected_search_query`: 1.0 when `rules["expect"]["pattern"]` is found in the
    active tab's `url`; 0.0 for an empty value."""
    if not active_tab_info:
        return 0.0
    return 1.0 if re.search(rules["expect"]["pattern"], active_tab_info["url"]) else 0.0


@crashes_as_eval_error("is_added_to_steam_cart")
def is_added_to_steam_cart(active_tab_info: Any, rule: dict[str, Any]) -> float:
    """OSWorld `is_added_to_steam_cart`: 1.0 when every string of `rule["items"]` occurs in the
    page's HTML `content` (a `page_info` value)."""
    content = active_tab_info["content"]
    return 1.0 if all(item in content for item in rule["items"]) else 0.0


METRICS: dict[str, Metric] = {
    "is_expected_active_tab": is_expected_active_tab,
    "is_expected_active_tab_approximate": is_expected_active_tab_approximate,
    "is_expected_url_pattern_match": is_expected_url_pattern_match,
    "is_expected_installed_extensions": is_expected_installed_extensions,
    "is_expected_tabs": is_expected_tabs,
    "is_expected_bookmarks": is_expected_bookmarks,
    "is_expected_search_query": is_expected_search_query,
    "is_added_to_steam_cart": is_added_to_steam_cart,
}
