"""OSWorld `SetupController` Chrome steps (`chrome_open_tabs`, `chrome_close_tabs`,
`update_browse_history`), driven over the Chrome DevTools Protocol (`cdp`).

Semantics of OSWorld `desktop_env/controllers/setup.py` (`_chrome_open_tabs_setup`,
`_chrome_close_tabs_setup`, `_update_browse_history_setup`), with these deliberate differences:

- connecting to Chrome is polled for up to `cdp.SETUP_CONNECT_TIMEOUT_S` (OSWorld: 15 attempts 5 s
  apart) and a Chrome that never answers is a SetupError;
- `update_browse_history` takes OSWorld's empty History database from the URL cache (never
  fetched) and stamps visits in UTC (OSWorld uses the host's local time, which Chrome reads as UTC);
- the history file's path is OSWorld's Linux one, `/home/user/.config/google-chrome/Default/History`
  (OSWorld asks the VM for `$HOME`).
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from common import url_cache
from common.task_urls import EMPTY_HISTORY_URL
from services.runner.osworld import cdp
from services.runner.osworld.chrome_profile import HISTORY
from services.runner.osworld.context import SetupContext
from services.runner.osworld.errors import SetupError
from services.runner.osworld.params import require
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import Needs, any_web_url
from services.runner.osworld.setup.base import StepHandler
from services.runner.osworld.urlcompare import compare_urls

logger = logging.getLogger(__name__)

OPEN_TAB_TIMEOUT_MS = 60_000
"""`chrome_open_tabs`: how long one tab may take to load before the next is opened (OSWorld's)."""

CLOSE_TABS_SETTLE_S = 5.0
"""`chrome_close_tabs`: OSWorld first waits this long for Chrome to finish launching."""


CHROME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)
"""Chrome's timestamps count microseconds since 1601-01-01 UTC."""

VISIT_TRANSITION = 805306368
"""`visits.transition` OSWorld writes: PAGE_TRANSITION_LINK with the chain start and end flags."""


def _string_list(params: dict[str, Any], key: str, where: str) -> list[str]:
    value = require(params, key, where, SetupError)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SetupError(f"{where}: parameter {key!r} must be a list of URL strings, got {value!r}")
    return value


def _chrome_open_tabs(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`chrome_open_tabs`: `urls_to_open` (list of URLs), each opened in a new tab of the first
    browser context; after the first, the tab that was first before it (Chrome's start tab) is
    closed. A tab that does not load within `OPEN_TAB_TIMEOUT_MS` (or fails: no network) is left
    as it is and the next one is opened, as OSWorld.

    Raises: SetupError when Chrome's DevTools do not answer on `ctx.chromium_port`.
    """
    urls = _string_list(params, "urls_to_open", "chrome_open_tabs")
    try:
        with cdp.chrome(env, ctx.chromium_port, wait_s=cdp.SETUP_CONNECT_TIMEOUT_S, close=False) as browser:
            if not urls:
                return
            context = browser.contexts[0]
            for index, url in enumerate(urls):
                page = context.new_page()
                try:
                    page.goto(url, timeout=OPEN_TAB_TIMEOUT_MS)
                except cdp.PlaywrightError as exc:
                    logger.warning("chrome_open_tabs: opening %s failed or exceeded the time limit: %s", url,
                                   exc.message)
                if index == 0:
                    context.pages[0].close()
    except cdp.ChromeUnreachable as exc:
        raise SetupError(f"chrome_open_tabs: {exc}") from exc


def _chrome_close_tabs(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`chrome_close_tabs`: `urls_to_close` (list of URLs); for each, the first tab of the first
    browser context whose URL equals it by `compare_urls` is closed (none: nothing happens). Waits
    `CLOSE_TABS_SETTLE_S` first (through `ctx.sleep`), as OSWorld.

    Raises: SetupError when Chrome's DevTools do not answer on `ctx.chromium_port`.
    """
    urls = _string_list(params, "urls_to_close", "chrome_close_tabs")
    ctx.sleep(CLOSE_TABS_SETTLE_S)
    try:
        with cdp.chrome(env, ctx.chromium_port, wait_s=cdp.SETUP_CONNECT_TIMEOUT_S, close=False) as browser:
            if not urls:
                return
            context = browser.contexts[0]
            for url in urls:
                page = next((p for p in context.pages if compare_urls(p.url, url)), None)
                if page is not None:
                    page.close()
    except cdp.ChromeUnreachable as exc:
        raise SetupError(f"chrome_close_tabs: {exc}") from exc


def _history_items(params: dict[str, Any]) -> list[tuple[str, str, float]]:
    items = require(params, "history", "update_browse_history", SetupError)
    if not isinstance(items, list):
        raise SetupError(f"update_browse_history: parameter 'history' must be a list, got {items!r}")
    found = []
    for index, item in enumerate(items):
        seconds = item.get("visit_time_from_now_in_seconds") if isinstance(item, dict) else None
        if not (isinstance(item, dict) and isinstance(item.get("url"), str) and isinstance(item.get("title"), str)
                and isinstance(seconds, int | float) and not isinstance(seconds, bool)):
            raise SetupError(f"update_browse_history: history[{index}] must be an object with 'url', 'title' "
                             f"(strings) and 'visit_time_from_now_in_seconds' (number), got {item!r}")
        found.append((item["url"], item["title"], float(seconds)))
    return found


def chrome_timestamp(when: datetime) -> int:
    """Chrome's timestamp of an aware datetime: microseconds since 1601-01-01 UTC (OSWorld's formula)."""
    return int((when - CHROME_EPOCH).total_seconds() * 1_000_000)


def add_history(db_path: Path, items: list[tuple[str, str, float]], now: datetime) -> None:
    """Insert `(url, title, seconds before now)` visits into the Chrome History database `db_path`:
    one `urls` row (visit_count 1, typed_count 0, hidden 0) and one `visits` row per item, as OSWorld.

    Raises: sqlite3.Error when the file is not a Chrome History database.
    """
    connection = sqlite3.connect(db_path)
    try:
        for url, title, seconds in items:
            stamp = chrome_timestamp(now - timedelta(seconds=seconds))
            cursor = connection.execute(
                "INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) "
                "VALUES (?, ?, ?, ?, ?, ?)", (url, title, 1, 0, stamp, 0))
            connection.execute(
                "INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) "
                "VALUES (?, ?, ?, ?, ?, ?)", (cursor.lastrowid, stamp, 0, VISIT_TRANSITION, 0, 0))
        connection.commit()
    finally:
        connection.close()


def _update_browse_history(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`update_browse_history`: `history` (list of `{"url", "title", "visit_time_from_now_in_seconds"}`)
    written into a copy of OSWorld's empty History database (from the URL cache), uploaded to the
    env as Chrome's History file and given to `user:user` (OSWorld runs the same `sudo chown`).

    Raises: SetupError for bad parameters, a cache miss, or a cached file that is not a History DB.
    """
    items = _history_items(params)
    try:
        cached = url_cache.lookup(ctx.cache_dir, EMPTY_HISTORY_URL, "history_empty.sqlite")
    except url_cache.CacheMiss as exc:
        raise SetupError(f"update_browse_history: {exc}") from exc
    with tempfile.TemporaryDirectory(prefix="osworld-history-") as tmp:
        db_path = Path(tmp) / "history_empty.sqlite"
        shutil.copyfile(cached, db_path)
        try:
            add_history(db_path, items, datetime.now(UTC))
        except sqlite3.Error as exc:
            raise SetupError(f"update_browse_history: {cached} is not a Chrome History database: {exc}") from exc
        env.upload_file(HISTORY, db_path.read_bytes())
    env.setup_execute(f"sudo chown -R user:user {HISTORY}", shell=True)


SETUP_HANDLERS: dict[str, StepHandler] = {
    "chrome_open_tabs": _chrome_open_tabs,
    "chrome_close_tabs": _chrome_close_tabs,
    "update_browse_history": _update_browse_history,
}
NEEDS: dict[str, Needs] = {
    "chrome_open_tabs": any_web_url("urls_to_open"),
}
