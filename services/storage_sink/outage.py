"""Back-off of the sink while its writes fail: rounds are retried with a growing pause until one writes
everything it read, so an outage of the store of any length loses nothing and sinks do not retry in step.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import tenacity


def rounds_until_written(round_left_pending: Callable[[], bool], stop: threading.Event,
                         backoff_max_s: float) -> None:
    """Call `round_left_pending` until it returns False (a round left nothing pending) or `stop` is set,
    pausing between calls 1 s doubling up to `backoff_max_s` seconds, plus up to 1 s of random jitter
    (tenacity's `wait_exponential` + `wait_random`). A stop during a pause ends it at once.
    Raises: whatever the round raises (the caller decides what a Redis error means)."""
    def pause(seconds: float) -> None:
        stop.wait(seconds)

    def next_round() -> bool:
        return not stop.is_set() and round_left_pending()

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_result(bool),
        wait=tenacity.wait_exponential(multiplier=1.0, max=backoff_max_s) + tenacity.wait_random(0, 1.0),
        stop=lambda _state: stop.is_set(), sleep=pause, retry_error_callback=lambda _state: True)
    retrying(next_round)
