"""OSWorld `desktop_env/evaluators/getters/chrome.py`: the active tab's URL from the accessibility
tree (Chrome's address bar) and the getters parsing it (`active_tab_url_parse`, `url_dashPart`,
`url_path_parse`). They read only the env's accessibility tree (`env.accessibility()`), no web page.

Deliberate difference: the address bar is looked up under the application named "Google Chrome"
(OSWorld on x86) and, when absent, "Chromium" (OSWorld on ARM, and the env pod's Debian chromium).
An empty accessibility tree reads as none (None), as OSWorld's failed request does.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import lxml.etree
from lxml.cssselect import CSSSelector

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter
from services.runner.osworld.protocol import EnvLike

logger = logging.getLogger(__name__)

ACCESSIBILITY_NAMESPACES = {
    "st": "uri:deskat:state.at-spi.gnome.org",
    "attr": "uri:deskat:attributes.at-spi.gnome.org",
    "cp": "uri:deskat:component.at-spi.gnome.org",
    "doc": "uri:deskat:document.at-spi.gnome.org",
    "docattr": "uri:deskat:attributes.document.at-spi.gnome.org",
    "txt": "uri:deskat:text.at-spi.gnome.org",
    "val": "uri:deskat:value.at-spi.gnome.org",
    "act": "uri:deskat:action.at-spi.gnome.org",
}
"""Namespace prefixes of OSWorld's accessibility tree XML."""

ADDRESS_BAR_SELECTORS = tuple(
    CSSSelector(f"application[name={app}] entry[name=Address\\ and\\ search\\ bar]",
                namespaces=ACCESSIBILITY_NAMESPACES)
    for app in ("Google\\ Chrome", "Chromium")
)
"""Chrome's address bar in the accessibility tree; the first selector that finds one is used."""

DEFAULT_GOTO_PREFIX = "https://"
"""Prepended to the address bar's text, which shows URLs without their scheme (config `goto_prefix`)."""


def get_active_url_from_accessTree(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None:  # noqa: N802
    """`active_url_from_accessTree`: `goto_prefix` (default `https://`) + the text of the first
    address bar of the accessibility tree; None when there is no tree, no address bar, or the last
    address bar found is empty.

    Raises: EvalError when the tree is not well-formed XML (OSWorld's getter raises there too).
    """
    tree = env.accessibility()
    if not tree:
        return None
    try:
        root = lxml.etree.fromstring(tree)
    except ValueError as exc:  # OSWorld: a str with an encoding declaration -> None
        logger.error("active_url_from_accessTree: cannot parse the accessibility tree: %s", exc)
        return None
    except lxml.etree.XMLSyntaxError as exc:
        raise EvalError(f"active_url_from_accessTree: the accessibility tree is not XML: {exc}") from exc
    elements: list[Any] = []
    for selector in ADDRESS_BAR_SELECTORS:
        elements = selector(root)
        if elements:
            break
    if not elements or not elements[-1].text:
        return None
    return f"{config.get('goto_prefix', DEFAULT_GOTO_PREFIX)}{elements[0].text}"


def get_active_tab_url_parse(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> dict[str, Any] | None:
    """`active_tab_url_parse`: `{key: first value of query parameter key ("" if absent)}` for each of
    `parse_keys` in the active tab's URL; `replace` (`{old key: new key}`) renames keys; with
    `split_list` every value becomes a list split on commas. None when there is no active URL.

    Raises: EvalError without `parse_keys`, or when `replace` names a key not in `parse_keys`.
    """
    url = get_active_url_from_accessTree(env, config, ctx)
    if url is None:
        return None
    try:
        query = parse_qs(urlparse(url).query)
        params: dict[str, Any] = {key: query.get(key, [""])[0] for key in config["parse_keys"]}
        if "replace" in config:
            for old, new in config["replace"].items():
                params[new] = params.pop(old)
        if config.get("split_list", False):
            params = {key: value.split(",") for key, value in params.items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise EvalError(f"active_tab_url_parse: bad config {config!r}: {exc!r}") from exc
    return params


def get_url_dashPart(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:  # noqa: N802
    """`url_dashPart`: part `partIndex` (int, may be negative) of the active tab's URL split on `/`,
    cut at `?` when `needDeleteId`; returned as is (`returnType` `"string"`) or as
    `{config["key"]: part}` (`"json"`). None when there is no active URL, `partIndex` is not an
    integer or past the end, or `returnType` is another value.

    Raises: EvalError for a negative `partIndex` before the start, or `"json"` without `key`.
    """
    url = get_active_url_from_accessTree(env, config, ctx)
    if url is None:
        return None
    try:
        index = int(config["partIndex"])
    except (KeyError, ValueError, TypeError):
        logger.error("url_dashPart: invalid partIndex %r", config.get("partIndex"))
        return None
    parts = url.split("/")
    if index >= len(parts):
        return None
    try:
        part = parts[index]
    except IndexError as exc:
        raise EvalError(f"url_dashPart: partIndex {index} is out of range for {url!r}") from exc
    if config.get("needDeleteId", False):
        part = part.split("?")[0]
    kind = config.get("returnType")
    if kind == "string":
        return part
    if kind == "json":
        if "key" not in config:
            raise EvalError("url_dashPart: returnType 'json' needs 'key'")
        return {config["key"]: part}
    if "returnType" not in config:
        raise EvalError("url_dashPart: missing 'returnType' ('string' or 'json')")
    return None


def _macys_filters(path_parts: list[str]) -> tuple[dict[str, Any], bool, bool]:
    """Macy's facet segments: the first pair of consecutive path segments that both contain commas
    are facet names and values (`Price_discount_range` values split on `|`); also whether they name
    a shirts department or short sleeves."""
    filters: dict[str, Any] = {}
    shirts = short_sleeve = False
    for names, values in zip(path_parts, path_parts[1:], strict=False):
        if "," in names and "," in values:
            for key, value in zip((k.strip() for k in names.split(",")), (v.strip() for v in values.split(",")),
                                  strict=False):
                if key == "Price_discount_range":
                    filters[key] = [item.strip() for item in value.split("|")] if value else None
                else:
                    filters[key] = value if value else None
                shirts = shirts or (key == "Product_department" and value in ("shirts", "Shirts", "Shirt"))
                short_sleeve = short_sleeve or (key == "Sleeve_length" and value in ("short-sleeve", "Short Sleeve"))
            break
    return filters, shirts, short_sleeve


FIFTY_PERCENT_OFF = "50_PERCENT_ off & more"


def get_url_path_parse(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> dict[str, Any] | None:
    """`url_path_parse` (OSWorld's `get_macys_product_url_parse`): from the active tab's decoded URL
    path, `mens_clothing` (True if the path has `mens-clothing`, else None), `shirts` and
    `short_sleeve` (True from the path or the facets, else None), and each of `parse_keys` found in
    the facets (`Men_regular_size_t`, `Price_discount_range` are always there, None when absent;
    `Price_discount_range` reads `"50_PERCENT_ off & more"` when that is its only discount of 20, 30
    or 50 %, else `"not_50_PERCENT_ off & more"`). None when there is no active URL.

    Raises: EvalError without `parse_keys`.
    """
    url = get_active_url_from_accessTree(env, config, ctx)
    if url is None:
        return None
    if "parse_keys" not in config:
        raise EvalError("url_path_parse: missing 'parse_keys'")
    path = unquote(urlparse(url).path)
    filters, shirts, short_sleeve = _macys_filters(path.strip("/").split("/"))
    shirts = shirts or "shirts" in path
    short_sleeve = short_sleeve or "short-sleeve" in path
    for field in ("Men_regular_size_t", "Price_discount_range"):
        filters.setdefault(field, None)
    result: dict[str, Any] = {
        "mens_clothing": True if "mens-clothing" in path else None,
        "shirts": True if shirts else None,
        "short_sleeve": True if short_sleeve else None,
    }
    for key in config["parse_keys"]:
        if key not in filters:
            continue
        if key == "Price_discount_range":
            discounts = filters[key]
            only_fifty = (discounts is not None and FIFTY_PERCENT_OFF in discounts
                          and "30_PERCENT_ off & more" not in discounts and "20_PERCENT_ off & more" not in discounts)
            result[key] = FIFTY_PERCENT_OFF if only_fifty else "not_50_PERCENT_ off & more"
        else:
            result[key] = filters[key]
    return result


GETTERS: dict[str, Getter] = {
    "active_url_from_accessTree": get_active_url_from_accessTree,
    "active_tab_url_parse": get_active_tab_url_parse,
    "url_dashPart": get_url_dashPart,
    "url_path_parse": get_url_path_parse,
}
