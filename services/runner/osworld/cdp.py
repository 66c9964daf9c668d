"""The env's Chrome over the Chrome DevTools Protocol, for the Chrome setup steps and getters.

Semantics of OSWorld (`desktop_env/controllers/setup.py`, `desktop_env/evaluators/getters/chrome.py`):
playwright's `connect_over_cdp("http://{env host}:{chromium port}")`. OSWorld tasks start Chrome
with `--remote-debugging-port=1337` and forward the chromium port (9222) to it with socat.

Differences: connecting is polled until a deadline instead of OSWorld's fixed sleeps (setup: 15
attempts 5 s apart; getters: one relaunch of Chrome, 5 s sleep, one more attempt).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, Playwright, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from services.runner.osworld.protocol import EnvLike

SETUP_CONNECT_TIMEOUT_S = 75.0
"""How long a setup step waits for Chrome's DevTools to answer (OSWorld: 15 attempts, 5 s apart)."""

RELAUNCH_CONNECT_TIMEOUT_S = 15.0
"""How long a getter waits for a Chrome it relaunched (OSWorld: sleeps 5 s, then one attempt)."""

RELAUNCH_COMMAND = ["google-chrome", "--remote-debugging-port=1337"]
"""What OSWorld's getters launch (via `/setup/launch`) when no Chrome answers on the chromium port."""

CONNECT_INTERVAL_S = 0.25

__all__ = ["Browser", "ChromeUnreachable", "PlaywrightError", "chrome", "devtools_url"]


class ChromeUnreachable(RuntimeError):
    """No Chrome answered CDP on the env's chromium port before the deadline; names the URL."""


def devtools_url(env: EnvLike, port: int) -> str:
    """`http://<env host>:<port>`: where playwright connects (OSWorld's `remote_debugging_url`)."""
    return f"http://{env.host}:{port}"


def _connect(playwright: Playwright, url: str, timeout_s: float) -> Browser:
    """Playwright's `connect_over_cdp(url)`, retried every `CONNECT_INTERVAL_S` until `timeout_s`.

    Raises: ChromeUnreachable with the last error.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return playwright.chromium.connect_over_cdp(url)
        except PlaywrightError as exc:
            if time.monotonic() >= deadline:
                raise ChromeUnreachable(f"no Chrome DevTools at {url} after {timeout_s:.0f}s: {exc.message}") from exc
        time.sleep(CONNECT_INTERVAL_S)


@contextmanager
def chrome(env: EnvLike, port: int, *, wait_s: float = 0.0, relaunch: bool = False,
           close: bool = True) -> Iterator[Browser]:
    """A playwright `Browser` connected over CDP to the env's Chrome on `port`.

    - `wait_s`: keep retrying the connection this long (seconds; 0: one attempt);
    - `relaunch`: when that fails, start Chrome in the env with `RELAUNCH_COMMAND` (as OSWorld's
      getters do) and wait up to `RELAUNCH_CONNECT_TIMEOUT_S` for it;
    - `close`: `browser.close()` on exit (for a CDP connection: disconnect and drop the contexts
      this connection created; Chrome and its own tabs stay). Setup steps leave it connected, as
      OSWorld; the connection ends with the playwright driver either way.

    Raises: ChromeUnreachable. Env transport errors of the relaunch propagate.
    """
    url = devtools_url(env, port)
    with sync_playwright() as playwright:
        try:
            browser = _connect(playwright, url, wait_s)
        except ChromeUnreachable:
            if not relaunch:
                raise
            env.launch(list(RELAUNCH_COMMAND))
            browser = _connect(playwright, url, RELAUNCH_CONNECT_TIMEOUT_S)
        try:
            yield browser
        finally:
            if close and browser.is_connected():
                try:
                    browser.close()
                except PlaywrightError:  # the connection dropped meanwhile: nothing left to close
                    pass
