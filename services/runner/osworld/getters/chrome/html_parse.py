"""OSWorld `desktop_env/evaluators/getters/chrome.py` `get_active_tab_html_parse`: values read from the
live DOM of the open tab whose URL is the active tab's (from the accessibility tree).

Config `category` chooses what is read (the other keys are `{selector: result key}` maps):
- `class`: texts of elements by class name: `class_singleObject` (first element),
  `class_multiObject` (`{class: {index: key}}`), `class_multiObject_child` (direct text nodes of the
  first element), `class_multiObject_only_child` (each element's `h3`),
  `class_multiObject_search_exist` (`{class: [texts]}` -> whether each text is present, and
  `is_other_exist`); a missing element reads `""`;
- `label`: `labelObject` (`{text: key}`), the text of the first element matching `text=<text>`;
- `xpath`: `xpathObject` (`{xpath: key}`), the first element's text;
- `input`: `inputObject` (`{xpath: key}`), the first input's value;
- `class&url`: `class_multiObject` / `class_multiObject_li` (`{class: [texts]}` -> lower-cased text
  -> True when present, `is_other_exist`), `url_include_expected` (`[text]`) and
  `url_include_expected_multichoice` (`{text in URL: key}`) matched against the tab's URL.
Texts are stripped. An unknown category gives `{}`.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import unquote

from services.runner.osworld import cdp
from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.chrome.live import port
from services.runner.osworld.getters.chrome.urls import get_active_url_from_accessTree
from services.runner.osworld.protocol import EnvLike

logger = logging.getLogger(__name__)

IDLE_TIMEOUT_MS = 60_000
"""How long each open tab may take to become network-idle before its URL is compared."""

DIRECT_TEXT_NODES_JS = """(node) => Array.from(node.childNodes)
    .filter(n => n.nodeType === Node.TEXT_NODE)
    .map(n => n.textContent.trim())
    .filter(Boolean)"""


def _normalize(url: str) -> str:
    return unquote(url).rstrip("/")


def _find_tab(browser: Any, url: str) -> Any:
    """The tab whose URL equals `url` (percent-decoded, trailing `/` ignored); OSWorld waits for each
    tab to be network-idle first, skips a tab that fails, and keeps the last context's match."""
    found = None
    for context in browser.contexts:
        for page in context.pages:
            try:
                page.wait_for_load_state("networkidle", timeout=IDLE_TIMEOUT_MS)
                if page.is_closed():
                    continue
                if _normalize(page.url) == _normalize(url):
                    found = page
                    break
            except cdp.PlaywrightError as exc:
                logger.debug("active_tab_html_parse: skipping a tab: %s", exc.message)
    return found


class _Reader:
    """OSWorld's `safely_get_*` helpers on the target tab: `[]` when the tab closed or the DOM fails."""

    def __init__(self, page: Any) -> None:
        self.page = page

    def _safely(self, read: Any, selector: str) -> list[Any]:
        if self.page.is_closed():
            return []
        try:
            return list(read(selector))
        except cdp.PlaywrightError as exc:
            logger.warning("active_tab_html_parse: reading %r failed: %s", selector, exc.message)
            return []

    def texts(self, selector: str) -> list[str]:
        return self._safely(lambda s: [e.text_content().strip() for e in self.page.query_selector_all(s) if e],
                            selector)

    def direct_texts(self, selector: str) -> list[str]:
        def read(s: str) -> list[str]:
            results = [e.evaluate(DIRECT_TEXT_NODES_JS) for e in self.page.query_selector_all(s)]
            return results[0] if results else []

        return self._safely(read, selector)

    def li_texts(self, selector: str) -> list[str]:
        return self._safely(lambda s: [e.query_selector("span").inner_text().strip()
                                       for e in self.page.query_selector_all(s + " li.catAllProducts")
                                       if e.query_selector("span")], selector)

    def h3_texts(self, selector: str) -> list[str]:
        return self._safely(lambda s: [e.query_selector("h3").text_content().strip()
                                       for e in self.page.query_selector_all(s) if e.query_selector("h3")], selector)


def _indexed(out: dict[str, Any], texts: list[str], keys: dict[str, str]) -> None:
    for order, key in keys.items():
        index = int(order)
        out[key] = texts[index] if len(texts) > index else ""


def _by_class(config: dict[str, Any], reader: _Reader, out: dict[str, Any]) -> None:
    for class_name, keys in config.get("class_multiObject", {}).items():
        _indexed(out, reader.texts("." + class_name), keys)
    for class_name, keys in config.get("class_multiObject_child", {}).items():
        _indexed(out, reader.direct_texts("." + class_name), keys)
    for class_name, keys in config.get("class_multiObject_only_child", {}).items():
        _indexed(out, reader.h3_texts("." + class_name), keys)
    for class_name, wanted in config.get("class_multiObject_search_exist", {}).items():
        texts = reader.texts("." + class_name)
        for text in wanted:
            if text != "is_other_exist":
                out[text] = text in texts
        if "is_other_exist" in wanted:
            if any(text not in wanted for text in texts):
                out["is_other_exist"] = True
            out.setdefault("is_other_exist", False)
    for class_name, key in config.get("class_singleObject", {}).items():
        texts = reader.texts("." + class_name)
        out[key] = texts[0] if texts else ""


def _first_text(page: Any, locator: Any) -> str:
    text = locator.first.text_content()
    return text.strip() if text else ""


def _by_label(config: dict[str, Any], page: Any, out: dict[str, Any]) -> None:
    for label, key in config.get("labelObject", {}).items():
        try:
            out[key] = "" if page.is_closed() else _first_text(page, page.locator(f"text={label}"))
        except cdp.PlaywrightError as exc:
            logger.error("active_tab_html_parse: label %r: %s", label, exc.message)
            out[key] = ""


def _by_xpath(config: dict[str, Any], page: Any, out: dict[str, Any]) -> None:
    for xpath, key in config.get("xpathObject", {}).items():
        try:
            if page.is_closed():
                out[key] = ""
                continue
            elements = page.locator(f"xpath={xpath}")
            if elements.count() == 0:  # OSWorld retries without the `xpath=` prefix
                elements = page.locator(xpath)
                if elements.count() == 0:
                    out[key] = ""
                    continue
            out[key] = _first_text(page, elements)
        except cdp.PlaywrightError as exc:
            logger.error("active_tab_html_parse: xpath %r: %s", xpath, exc.message)
            out[key] = ""


def _by_input(config: dict[str, Any], page: Any, out: dict[str, Any]) -> None:
    for xpath, key in config.get("inputObject", {}).items():
        try:
            if page.is_closed():
                out[key] = ""
                continue
            inputs = page.locator(f"xpath={xpath}")
            value = inputs.first.input_value() if inputs.count() > 0 else ""
            out[key] = value.strip() if value else ""
        except cdp.PlaywrightError as exc:
            logger.error("active_tab_html_parse: input %r: %s", xpath, exc.message)
            out[key] = ""


def _present(out: dict[str, Any], texts: list[str], wanted: list[str]) -> None:
    for key in wanted:
        if any(key.lower() == text.lower() for text in texts):
            out[key.lower()] = True
    if any(all(text.lower() not in item.lower() for item in wanted) for text in texts):
        out["is_other_exist"] = True
    out.setdefault("is_other_exist", False)


def _url_flag(out: dict[str, Any], page: Any, needle: str, key: str) -> None:
    try:
        found = False if page.is_closed() else needle.lower() in page.url.lower()
    except cdp.PlaywrightError:
        found = False
    out.setdefault(key.lower(), found)


def _by_class_and_url(config: dict[str, Any], reader: _Reader, out: dict[str, Any]) -> None:
    for class_name, wanted in config.get("class_multiObject", {}).items():
        _present(out, reader.texts("." + class_name), wanted)
    for class_name, wanted in config.get("class_multiObject_li", {}).items():
        _present(out, reader.li_texts("." + class_name), wanted)
    for key in config.get("url_include_expected", []):
        _url_flag(out, reader.page, key, key)
    for needle, key in config.get("url_include_expected_multichoice", {}).items():
        _url_flag(out, reader.page, needle, key)


def get_active_tab_html_parse(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> dict[str, Any] | None:
    """`active_tab_html_parse`: `{result key: value}` read from the open tab showing the active URL
    (see the module docstring for `category`); None when there is no active URL, `{}` when no open
    tab shows it. Relaunches Chrome once when none answers, as OSWorld.

    Raises: EvalError without `category`, or when Chrome does not answer even after the relaunch
    (OSWorld's getter raises there too).
    """
    url = get_active_url_from_accessTree(env, config, ctx)
    if not isinstance(url, str):
        return None
    if "category" not in config:
        raise EvalError("active_tab_html_parse: missing 'category'")
    category = config["category"]
    try:
        with cdp.chrome(env, port(ctx), relaunch=True) as browser:
            page = _find_tab(browser, url)
            if page is None:
                logger.error("active_tab_html_parse: no open tab shows %s", url)
                return {}
            out: dict[str, Any] = {}
            if category == "class":
                _by_class(config, _Reader(page), out)
            elif category == "label":
                _by_label(config, page, out)
            elif category == "xpath":
                _by_xpath(config, page, out)
            elif category == "input":
                _by_input(config, page, out)
            elif category == "class&url":
                _by_class_and_url(config, _Reader(page), out)
            return out
    except cdp.ChromeUnreachable as exc:
        raise EvalError(f"active_tab_html_parse: {exc}") from exc
