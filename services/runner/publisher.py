"""Publishes step and episode events onto the Redis Stream, with backpressure instead of trimming."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import redis
import tenacity

from common import keys
from common.events import EpisodeEvent, StepEvent, encode_event
from common.eventshards import stream_of

log = logging.getLogger(__name__)
_T = TypeVar("_T")


class BackpressureTimeout(RuntimeError):
    """The stream stayed above its backlog limit for too long (the sink is down or too slow)."""


def stream_bytes(client: redis.Redis, stream: str = keys.EVENTS_STREAM) -> int:
    """Bytes the stream takes in Redis (`MEMORY USAGE key SAMPLES 0`: every node counted); 0 when missing."""
    used = client.memory_usage(stream, samples=0)
    return int(used or 0)  # type: ignore[arg-type]


def retry_redis(call: Callable[[], _T], within_s: float, what: str, interval_s: float = 0.5) -> _T:
    """Call `call`, retrying on Redis errors and backpressure timeouts while a retry can start within
    `within_s` seconds of the first call; waits between calls grow from `interval_s` seconds, doubling
    up to 8 x `interval_s`, plus up to `interval_s` of random jitter (runners that lost Redis together
    do not come back in step). Raises: the last error once the time is up."""
    def warn(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        log.warning("%s failed (%r); retrying", what, error)

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type((redis.RedisError, BackpressureTimeout)),
        wait=tenacity.wait_exponential(multiplier=interval_s, max=8 * interval_s) + tenacity.wait_random(0, interval_s),
        stop=tenacity.stop_before_delay(within_s), before_sleep=warn, reraise=True)
    return retrying(call)


class EventPublisher:
    """XADD events to their run's stream (`common.eventshards`: `keys.EVENTS_STREAM` with one shard).
    Never trims (MAXLEN would drop unpersisted entries).

    Before an XADD, while the stream takes more than `backlog_bytes` bytes of Redis memory (the
    sink deletes entries once persisted, so this is the unpersisted backlog: PNGs make entries of very
    different sizes, so bytes, not entry counts, bound Redis memory), waits (polling) up to `wait_s`
    seconds for the sink to catch up. Raises: BackpressureTimeout.

    The measure (`MEMORY USAGE ... SAMPLES 0`) walks the whole stream in Redis, so it is not taken before
    every XADD: after a measure finds room R, this publisher adds up to min(R / 2, `CHECK_EVERY_BYTES`) bytes
    of entries within `CHECK_EVERY_S` seconds before measuring again. Alone, it never passes the limit by more
    than one entry (as with a measure per XADD); N publishers together by at most what N publish in
    `CHECK_EVERY_S` (and never more than N x `CHECK_EVERY_BYTES`). With `shards` streams, each stream
    has its own limit and budget.
    """

    CHECK_EVERY_BYTES = 8 * 1024 * 1024
    CHECK_EVERY_S = 1.0

    def __init__(self, client: redis.Redis, backlog_bytes: int, wait_s: float, shards: int = 1) -> None:
        self.client = client
        self.backlog_bytes = backlog_bytes
        self.wait_s = wait_s
        self.shards = shards
        #: stream -> (bytes this publisher may still add before measuring again, when last measured)
        self._budgets: dict[str, tuple[int, float]] = {}

    def _wait_for_room(self, stream: str, size: int) -> None:
        """Return once an entry of `size` bytes may be added to `stream`. Raises: BackpressureTimeout."""
        now = time.monotonic()
        budget, measured_at = self._budgets.get(stream, (0, 0.0))
        if size <= budget and now - measured_at < self.CHECK_EVERY_S:
            self._budgets[stream] = (budget - size, measured_at)
            return
        deadline = now + self.wait_s
        while (used := stream_bytes(self.client, stream)) > self.backlog_bytes:
            if time.monotonic() >= deadline:
                raise BackpressureTimeout(
                    f"event stream above {self.backlog_bytes} bytes ({used}) for {self.wait_s:.0f}s: "
                    "is the sink running?"
                )
            time.sleep(0.1)
        self._budgets[stream] = (min((self.backlog_bytes - used) // 2, self.CHECK_EVERY_BYTES), time.monotonic())

    def publish(self, event: StepEvent | EpisodeEvent, png: bytes | None = None, wait: bool = True) -> str:
        """Append one event (and its PNG for steps); returns the stream entry id. `wait=False` skips
        the backpressure wait (small end events, which let the sink finish a trajectory)."""
        fields = encode_event(event, png)
        stream = stream_of(event.run_id, self.shards)
        if wait:
            self._wait_for_room(stream, sum(len(k) + len(v) for k, v in fields.items()))
        entry_id = self.client.xadd(stream, fields)  # type: ignore[arg-type]
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
