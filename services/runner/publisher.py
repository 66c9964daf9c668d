"""Publishes step and episode events onto the Redis Stream, with backpressure instead of trimming.

With a blob writer (`RUNNER_STORE_URL`, `common.blobs`), a step's screenshot is put to the object store
under its content address first and the entry carries its key (`png_key`), not its bytes (SPEC section 7);
a step record above `RECORD_INLINE_MAX_BYTES` (token ids and logprobs: thousands of prompt token ids with
screenshots in the prompt) goes whole to the store too (`record_key`) and the entry carries the record
without its token arrays.
Metrics: `cua_runner_stream_bytes_total{type}` (bytes of the entries XADDed: field names and values, what
`MEMORY USAGE` grows by, less Redis' own overhead) and `cua_runner_blob_bytes_total` (bytes put as blobs).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar, cast

import redis
import tenacity
import urllib3
from prometheus_client import Counter

from common import keys
from common.blob_keys import blob_key
from common.blobs import BlobWriter
from common.events import EpisodeEvent, StepEvent, encode_event, without_token_arrays
from common.eventshards import stream_of

log = logging.getLogger(__name__)
_T = TypeVar("_T")


STREAM_BYTES = Counter("cua_runner_stream_bytes_total", "Bytes of the event stream entries published", ["type"])
BLOB_BYTES = Counter("cua_runner_blob_bytes_total", "Bytes of the step files put to the object store")


class BackpressureTimeout(RuntimeError):
    """The stream stayed above its backlog limit for too long (the sink is down or too slow)."""


class BlobPutError(RuntimeError):
    """A step file could not be put to the object store (store down, or the runner's credential refused:
    the message says which). Infrastructure: the attempt ends as `env_error` and is retried."""


def _transient(exc: BaseException) -> bool:
    """A put failure worth retrying: transport errors, and S3's 5xx / SlowDown answers."""
    from minio.error import S3Error

    if isinstance(exc, S3Error):
        return exc.code in ("SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout")
    return isinstance(exc, (urllib3.exceptions.HTTPError, OSError))


def put_blob(writer: BlobWriter, key: str, data: bytes, content_type: str, within_s: float) -> str:
    """Put `data` under `key`, its content address (`common.blobs.blob_key`), and return the key; transient
    failures retried (waits 0.2 s doubling to 2 s) while a retry can start within `within_s` seconds.
    Putting the same bytes again rewrites the same object (idempotent). Raises: BlobPutError naming the
    store and the last error (an S3 AccessDenied at once: the credential is wrong, retrying cannot help)."""
    retrying = tenacity.Retrying(retry=tenacity.retry_if_exception(_transient),
                                 wait=tenacity.wait_exponential(multiplier=0.2, max=2.0),
                                 stop=tenacity.stop_before_delay(within_s), reraise=True)
    try:
        retrying(writer.put, key, data, content_type)
    except Exception as exc:
        from minio.error import S3Error

        if not isinstance(exc, (S3Error, urllib3.exceptions.HTTPError, OSError)):
            raise  # a bug, not the store
        raise BlobPutError(f"put of {key} ({len(data)} bytes) to {writer.describe()} failed: {exc!r}") from exc
    BLOB_BYTES.inc(len(data))
    return key


def stream_bytes(client: redis.Redis, stream: str = keys.EVENTS_STREAM) -> int:
    """Bytes the stream takes in Redis (`MEMORY USAGE key SAMPLES 0`: every node counted); 0 when missing."""
    used = cast("int | None", client.memory_usage(stream, samples=0))
    return int(used or 0)


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


#: A step record's JSON longer than this (bytes) goes to the store whole, when there is a store, and its entry
#: carries it without the token arrays: the rest (texts, actions, timings) is ~1 KB, so entries stay under 4 KB.
RECORD_INLINE_MAX_BYTES = 2048


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

    def __init__(self, client: redis.Redis, backlog_bytes: int, wait_s: float, shards: int = 1,
                 blobs: BlobWriter | None = None, blob_retry_s: float = 300.0) -> None:
        self.client = client
        self.backlog_bytes = backlog_bytes
        self.wait_s = wait_s
        self.shards = shards
        #: Where step files go before their event (None: a step's PNG rides in its entry, as before).
        self.blobs = blobs
        self.blob_retry_s = blob_retry_s
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

    def put_file(self, data: bytes, content_type: str, suffix: str) -> str | None:
        """Put a step file as a blob (`put_blob`) and return its key; None without a blob writer.
        Raises: BlobPutError."""
        if self.blobs is None:
            return None
        return put_blob(self.blobs, blob_key(data, suffix), data, content_type, self.blob_retry_s)

    def publish(self, event: StepEvent | EpisodeEvent, png: bytes | None = None, wait: bool = True) -> str:
        """Append one event (and its PNG for steps: put to the store first and sent as its key when this
        publisher has a blob writer, else in the entry); returns the stream entry id. `wait=False` skips
        the backpressure wait (small end events, which let the sink finish a trajectory). The put comes
        after the backpressure wait, right before the XADD: a blob precedes its event by the put's time
        only (what the sink's reconciliation rule relies on, `services/storage_sink/reconcile.py`).
        Raises: BlobPutError, BackpressureTimeout, redis.RedisError."""
        puts: list[tuple[str, bytes, str]] = []  # (key, bytes, content type) of the blobs, put after the wait
        fields = encode_event(event, png)
        if self.blobs is not None and isinstance(event, StepEvent):
            png_key = record_key = None
            if png is not None:
                png_key = blob_key(png, ".png")
                puts.append((png_key, png, "image/png"))
            record = fields[b"data"]
            if len(record) > RECORD_INLINE_MAX_BYTES:
                record_key = blob_key(record, ".json")
                puts.append((record_key, record, "application/json"))
            fields = encode_event(without_token_arrays(event) if record_key else event, None, png_key, record_key)
        stream = stream_of(event.run_id, self.shards)
        size = sum(len(k) + len(v) for k, v in fields.items())
        if wait:
            self._wait_for_room(stream, size)
        for key, data, content_type in puts:
            assert self.blobs is not None
            put_blob(self.blobs, key, data, content_type, self.blob_retry_s)
        entry_id = self.client.xadd(stream, fields)  # type: ignore[arg-type]
        STREAM_BYTES.labels(fields[b"type"].decode()).inc(size)
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
