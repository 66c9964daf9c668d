"""OSWorld `desktop_env/evaluators/getters/chrome.py` `get_gotoRecreationPage_and_get_html_content`:
the expected value of the recreation.gov task, read live from the site.

Steps (OSWorld's): open recreation.gov (https, then http, then without `www`; each with the wait
strategies domcontentloaded, load, networkidle), search "Diamond", open the first highlighted
result (a popup), click "next available" if there is such a button, then read the text of the
element with class `class` (the `order`-th one, else the first). Needs the internet.
Differences: OSWorld's connectivity probe of google.com (it only logs) is left out; its fixed waits
(10 s after the search, 30 s after opening the result) go through `ctx.setup.sleep`.
"""

from __future__ import annotations

import logging
from typing import Any

from services.runner.osworld import cdp
from services.runner.osworld.context import EvalContext
from services.runner.osworld.getters.chrome.live import port, with_retries
from services.runner.osworld.protocol import EnvLike

logger = logging.getLogger(__name__)

SITE_URLS = ("https://www.recreation.gov/", "http://www.recreation.gov/", "https://recreation.gov/")
WAIT_STRATEGIES = ("domcontentloaded", "load", "networkidle")
TIMEOUT_MS = 60_000
EXTRA_HEADERS = {
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,image/webp,image/apng,*/*;q=0.8",
    "Accept-Language": "en-US,en;q=0.9",
    "Accept-Encoding": "gzip, deflate, br",
    "DNT": "1",
    "Connection": "keep-alive",
    "Upgrade-Insecure-Requests": "1",
}
NEXT_AVAILABLE_SELECTORS = ("button.next-available", "button[class*='next-available']", "button[class*='next']",
                            ".next-available", "[data-testid*='next']")
SEARCH_WAIT_S = 10.0
RESULT_WAIT_S = 30.0
FAILED = "__EVALUATION_FAILED__"


def _open_site(page: Any) -> None:
    for url in SITE_URLS:
        for wait_until in WAIT_STRATEGIES:
            try:
                page.goto(url, wait_until=wait_until, timeout=TIMEOUT_MS)
                return
            except cdp.PlaywrightError as exc:
                logger.debug("recreation: %s (%s): %s", url, wait_until, exc.message)
    raise cdp.ChromeUnreachable("Failed to navigate to any recreation.gov URL variant")


def _click_next_available(page: Any) -> None:
    for selector in NEXT_AVAILABLE_SELECTORS:
        try:
            page.wait_for_selector(selector, state="visible", timeout=30_000)
            page.click(selector, timeout=30_000)
            return
        except cdp.PlaywrightError:
            continue
    logger.warning("recreation: no next-available button; reading the page as it is")


def _class_text(page: Any, config: dict[str, Any], class_name: str) -> Any:
    """The stripped text of the `order`-th (else the first) element of class `class_name`;
    `FAILED` when there is none or reading it fails (OSWorld's marker)."""
    try:
        if "order" in config:
            elements = page.query_selector_all("." + class_name)
            order = int(config["order"])
            element = elements[order] if len(elements) > order else None
        else:
            element = page.query_selector("." + class_name)
        if element is None:
            return FAILED
        text = element.text_content()
        return text.strip() if text else text
    except (cdp.PlaywrightError, ValueError, TypeError, IndexError) as exc:
        logger.error("recreation: reading class %r failed: %s", class_name, exc)
        return FAILED


def _read(page: Any, config: dict[str, Any]) -> dict[str, Any]:
    try:
        if config["selector"] == "class":
            return {"expected": {config["class"]: _class_text(page, config, config["class"])}}
        return {"expected": {}}
    except (KeyError, TypeError) as exc:
        logger.error("recreation: extraction failed: %s", exc)
        return {"expected": {"extraction_error": FAILED}}


def get_gotoRecreationPage_and_get_html_content(env: EnvLike, config: dict[str, Any],  # noqa: N802
                                                ctx: EvalContext) -> dict[str, Any]:
    """`gotoRecreationPage_and_get_html_content`: `{"expected": {class: text}}` (config `selector`
    `"class"`, `class`, optional `order`), `__EVALUATION_FAILED__` as the text when the element is
    missing; after three failed attempts (5 s apart) `{"expected": {"error": ..., "error_message"}}`."""
    last_error: list[str] = []

    def run() -> dict[str, Any]:
        try:
            with cdp.chrome(env, port(ctx), relaunch=True) as browser:
                page = browser.new_page()
                page.set_default_timeout(TIMEOUT_MS)
                page.set_extra_http_headers(EXTRA_HEADERS)
                _open_site(page)
                try:
                    page.wait_for_load_state("networkidle", timeout=30_000)
                except cdp.PlaywrightError:
                    pass
                page.wait_for_selector("input#hero-search-input", state="visible", timeout=TIMEOUT_MS)
                page.fill("input#hero-search-input", "Diamond")
                page.wait_for_selector("button.nav-search-button", state="visible", timeout=TIMEOUT_MS)
                page.click("button.nav-search-button")
                ctx.setup.sleep(SEARCH_WAIT_S)
                page.wait_for_selector(".search-result-highlight--success", state="visible", timeout=TIMEOUT_MS)
                with page.expect_popup() as popup:
                    page.click(".search-result-highlight--success")
                ctx.setup.sleep(RESULT_WAIT_S)
                result = popup.value
                result.set_default_timeout(TIMEOUT_MS)
                result.wait_for_load_state("networkidle", timeout=TIMEOUT_MS)
                _click_next_available(result)
                return _read(result, config)
        except cdp.ChromeUnreachable as exc:
            last_error[:] = [str(exc)]
            raise
        except cdp.PlaywrightError as exc:
            last_error[:] = [exc.message]
            raise

    def fallback() -> dict[str, Any]:
        message = last_error[0] if last_error else "unknown error"
        return {"expected": {"error": FAILED, "error_message": f"Failed after 3 attempts: {message}"}}

    return with_retries(ctx, "gotoRecreationPage_and_get_html_content", 3, 5.0, run, fallback)
