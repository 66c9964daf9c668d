"""What the live-browser Chrome getters share: the DevTools port, OSWorld's retry loops and timeouts.

Semantics of OSWorld `desktop_env/evaluators/getters/chrome.py`: each getter connects with
playwright over CDP (`cdp.chrome`), relaunching Chrome when none answers, and on a browser failure
retries a few times with a pause, then returns its own fallback value. Only playwright and
connection failures are retried or turned into the fallback; anything else is a bug and propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from services.runner.osworld import cdp
from services.runner.osworld.context import EvalContext

logger = logging.getLogger(__name__)

T = TypeVar("T")

BROWSER_FAILURES = (cdp.PlaywrightError, cdp.ChromeUnreachable)
"""What a live getter retries or answers with its fallback (OSWorld catches every exception)."""


def port(ctx: EvalContext) -> int:
    """The env's Chrome DevTools port (OSWorld's `env.chromium_port`)."""
    return ctx.setup.chromium_port


def with_retries(ctx: EvalContext, where: str, attempts: int, pause_s: float, run: Callable[[], T],
                 fallback: Callable[[], T]) -> T:
    """`run()`; on a `BROWSER_FAILURES` error, up to `attempts` tries `pause_s` seconds apart
    (through `ctx.setup.sleep`), then `fallback()`."""
    for attempt in range(1, attempts + 1):
        try:
            return run()
        except BROWSER_FAILURES as exc:
            logger.warning("%s: attempt %d/%d failed: %s", where, attempt, attempts, exc)
            if attempt < attempts:
                ctx.setup.sleep(pause_s)
    return fallback()
