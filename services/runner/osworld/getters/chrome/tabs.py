"""OSWorld `desktop_env/evaluators/getters/chrome.py`: getters of the live browser over CDP: the open
tabs, the active tab reloaded, a page loaded by URL (`page_info`, `pdf_from_url`) and values read
from a page (`info_from_website`).

Each returns what OSWorld's getter returns, including its fallback when the browser fails (see
`live.with_retries`). Timeouts (ms) and pauses (s) are OSWorld's.
"""

from __future__ import annotations

import logging
from typing import Any

from services.runner.osworld import cdp
from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import work_dir
from services.runner.osworld.getters.chrome.live import BROWSER_FAILURES, port, with_retries
from services.runner.osworld.getters.chrome.urls import get_active_url_from_accessTree
from services.runner.osworld.hostpaths import local_name
from services.runner.osworld.params import require_str
from services.runner.osworld.protocol import EnvLike

logger = logging.getLogger(__name__)

TAB_TIMEOUT_MS = 30_000
"""`open_tabs_info`: how long each tab may take to become network-idle."""
PAGE_TIMEOUT_MS = 60_000
"""`active_tab_info`, `page_info`, `pdf_from_url`: navigation and load timeout."""
SELECTOR_TIMEOUT_MS = 10_000
"""`info_from_website`: how long an element may take to appear."""
PDF_RENDER_WAIT_S = 3.0
"""`pdf_from_url`: pause after the page is network-idle, before printing."""
FALLBACK_PDF = b"%PDF-1.4\n%EOF\n"
"""`pdf_from_url`: what OSWorld writes when every attempt failed."""


def get_open_tabs_info(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> list[dict[str, str]]:
    """`open_tabs_info`: `[{"title", "url"}]` of every tab of every browser context, in order, each
    after it is network-idle (a tab that fails to get there: title `"Error encountered"`); `[]` when
    no Chrome answers even after a relaunch, or the browser fails twice (3 s apart)."""

    def run() -> list[dict[str, str]]:
        try:
            with cdp.chrome(env, port(ctx), relaunch=True) as browser:
                tabs: list[dict[str, str]] = []
                for context in browser.contexts:
                    for page in context.pages:
                        try:
                            page.set_default_timeout(TAB_TIMEOUT_MS)
                            page.wait_for_load_state("networkidle", timeout=TAB_TIMEOUT_MS)
                            tabs.append({"title": page.title(), "url": page.url})
                        except cdp.PlaywrightError as exc:
                            logger.warning("open_tabs_info: tab %s: %s", page.url, exc.message)
                            tabs.append({"title": "Error encountered", "url": page.url})
                return tabs
        except cdp.ChromeUnreachable as exc:
            logger.error("open_tabs_info: %s", exc)
            return []

    return with_retries(ctx, "open_tabs_info", 2, 3.0, run, list)


def _load(page: Any, url: str) -> None:
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.goto(url, wait_until="networkidle", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_load_state("networkidle", timeout=PAGE_TIMEOUT_MS)


def get_active_tab_info(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> dict[str, str] | None:
    """`active_tab_info`: the active tab's URL (`active_url_from_accessTree`, config `goto_prefix`)
    loaded again in a new page (new browser context) until network-idle: `{"title", "url",
    "content"}` (content: the page's HTML). None when there is no active URL, no Chrome answers (no
    relaunch), or the page fails to load (e.g. no network)."""
    url = get_active_url_from_accessTree(env, config, ctx)
    if url is None:
        return None

    def run() -> dict[str, str] | None:
        try:
            with cdp.chrome(env, port(ctx)) as browser:
                page = browser.new_page()
                try:
                    _load(page, url)
                    return {"title": page.title(), "url": page.url, "content": page.content()}
                except cdp.PlaywrightError as exc:
                    logger.error("active_tab_info: cannot load %s: %s", url, exc.message)
                    return None
        except cdp.ChromeUnreachable as exc:
            logger.error("active_tab_info: %s", exc)
            return None

    return with_retries(ctx, "active_tab_info", 2, 3.0, run, lambda: None)


def get_page_info(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> dict[str, str]:
    """`page_info`: `url` loaded in a new page (new browser context) until network-idle:
    `{"title", "url", "content"}`; title `"Error encountered"` when the page loaded but could not be
    read; `{"title": "Connection failed", "url": url, "content": ""}` after two failed attempts
    (3 s apart), e.g. with no network."""
    url = require_str(config, "url", "page_info", EvalError)

    def run() -> dict[str, str]:
        with cdp.chrome(env, port(ctx), relaunch=True) as browser:
            page = browser.new_page()
            page.set_default_timeout(PAGE_TIMEOUT_MS)
            page.goto(url, wait_until="networkidle", timeout=PAGE_TIMEOUT_MS)
            try:
                page.wait_for_load_state("networkidle", timeout=PAGE_TIMEOUT_MS)
                return {"title": page.title(), "url": page.url, "content": page.content()}
            except cdp.PlaywrightError as exc:
                logger.error("page_info: %s", exc.message)
                return {"title": "Error encountered", "url": page.url, "content": page.content()}

    return with_retries(ctx, "page_info", 2, 3.0, run,
                        lambda: {"title": "Connection failed", "url": url, "content": ""})


def get_pdf_from_url(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str:
    """`pdf_from_url`: the page at URL `path`, loaded in a new page until network-idle, printed to PDF
    (Chrome's print-to-PDF defaults) at `work_dir/<dest>`; returns that host path. After three
    failed attempts (5 s apart), the file holds `FALLBACK_PDF` (an empty PDF) and its path is
    returned, as OSWorld."""
    url = require_str(config, "path", "pdf_from_url", EvalError)
    local = work_dir(ctx, "pdf_from_url") / local_name(
        require_str(config, "dest", "pdf_from_url", EvalError), "pdf_from_url", EvalError)

    def run() -> str:
        with cdp.chrome(env, port(ctx), relaunch=True) as browser:
            page = browser.new_page()
            _load(page, url)
            ctx.setup.sleep(PDF_RENDER_WAIT_S)
            page.pdf(path=str(local))
        if not local.is_file():
            raise cdp.ChromeUnreachable(f"pdf_from_url: Chrome wrote no PDF at {local}")
        return str(local)

    def fallback() -> str:
        local.write_bytes(FALLBACK_PDF)
        return str(local)

    return with_retries(ctx, "pdf_from_url", 3, 5.0, run, fallback)


def _wait_for(page: Any, selector: str, timeout_ms: float | None = SELECTOR_TIMEOUT_MS) -> Any:
    if timeout_ms is None:
        return page.wait_for_selector(selector, state="attached")
    return page.wait_for_selector(selector, state="attached", timeout=timeout_ms)


def _click_through(page: Any, selectors: list[str]) -> Any:
    """Click every selector but the last (each waiting for the page to load); the last element."""
    for selector in selectors[:-1]:
        _wait_for(page, selector).click()
        page.wait_for_load_state("load")
    return selectors[-1]


def _read_infos(page: Any, url: str, infos: list[dict[str, Any]]) -> list[Any]:
    found: list[Any] = []
    for info in infos:
        if page.url != url:
            page.goto(url)
            page.wait_for_load_state("load")
        action = info.get("action", "inner_text")
        if action == "inner_text":
            found.append(_wait_for(page, info["selector"]).inner_text())
        elif action == "attribute":
            found.append(_wait_for(page, info["selector"]).get_attribute(info["attribute"]))
        elif action == "click_and_inner_text":
            found.append(_wait_for(page, _click_through(page, info["selector"])).inner_text())
        elif action == "click_and_attribute":  # OSWorld waits for the last element with the default timeout
            found.append(_wait_for(page, _click_through(page, info["selector"]), None).get_attribute(info["attribute"]))
        else:
            raise NotImplementedError(f"The action {action} is not supported yet.")
    return found


def get_info_from_website(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """`info_from_website`: `url` opened in a new tab of the first browser context, then for each of
    `infos` (`{"action", "selector", "attribute"}`; actions `inner_text`, `attribute`,
    `click_and_inner_text`, `click_and_attribute`, the `click_` ones clicking through a list of
    selectors first) the value read, in order (the page reloaded when a click left it). Any failure
    (no network, an element missing after 10 s, a bad `infos` entry): `backups` (None if absent).
    The tab is left open, as OSWorld."""
    url = config.get("url")
    try:
        if not isinstance(url, str):
            raise KeyError("url")
        with cdp.chrome(env, port(ctx), relaunch=True, close=False) as browser:
            page = browser.contexts[0].new_page()
            page.goto(url)
            page.wait_for_load_state("load")
            return _read_infos(page, url, list(config.get("infos", [])))
    except (*BROWSER_FAILURES, KeyError, IndexError, TypeError, NotImplementedError) as exc:
        logger.error("info_from_website: cannot read %s (%r); using the backups", url, exc)
        return config.get("backups", None)
