"""Redis Stream consumer of the sink: at-least-once, ack after the durable write (SPEC section 7).

Each round first takes over entries another consumer left pending for longer than `claim_idle_ms`
(XAUTOCLAIM: a dead sink's work), then reads new ones (XREADGROUP `>`). An entry is acknowledged and
deleted from the stream only after its objects are written, so XLEN is the unpersisted backlog that
runners watch for backpressure. Undecodable entries, and entries whose write failed more than
`max_deliveries` times while the store was otherwise healthy, go to the dead-letter stream, which is
capped at `dead_letter_max` entries (approximate MAXLEN); a dead letter's PNG is stored aside in the
object store (`_dead_letters/{entry_id}.png`) and the entry keeps only its key.

While the store is down (a write fails and `ObjectStore.healthy()` is false) nothing is dead-lettered:
the consumer backs off (1 s doubling to `outage_backoff_max_s`) and retries its own pending entries
first (XREADGROUP `0`), so an outage of any length loses nothing. Writes of one trajectory are
serialised across sinks by a Redis lock (`keys.sink_lock`). A Redis error (NOGROUP after a Redis
restart without its data, a connection loss) never ends the loop: the group is re-created, the
round retried.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import redis
from prometheus_client import Counter, Histogram

from common import keys
from common.events import decode_event
from services.storage_sink.settings import SinkSettings
from services.storage_sink.writer import TrajectoryWriter

log = logging.getLogger(__name__)

#: Object-store prefix of the PNGs of dead-lettered entries (`{prefix}/{entry_id}.png`).
DEAD_LETTER_PREFIX = "_dead_letters"

WRITTEN = Counter("cua_sink_events_written_total", "Events persisted", ["type"])
DROPPED = Counter("cua_sink_events_stale_total", "Events of superseded attempts dropped")
DEAD = Counter("cua_sink_dead_lettered_total", "Entries moved to the dead-letter stream")
CLAIMED = Counter("cua_sink_claimed_total", "Entries taken over from idle consumers")
WRITE_SECONDS = Histogram("cua_sink_write_seconds", "Time to persist one event")


class SinkConsumer:
    """One consumer of group `keys.SINK_GROUP` on `keys.EVENTS_STREAM`."""

    def __init__(self, client: redis.Redis, writer: TrajectoryWriter, settings: SinkSettings) -> None:
        self.client = client
        self.writer = writer
        self.settings = settings
        self.outage = False
        self._backoff_s = 0.0

    def ensure_group(self) -> None:
        """Create the consumer group (and the stream) if missing."""
        try:
            self.client.xgroup_create(keys.EVENTS_STREAM, keys.SINK_GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def _claim(self) -> list[tuple[bytes, dict[bytes, bytes]]]:
        result: Any = self.client.xautoclaim(keys.EVENTS_STREAM, keys.SINK_GROUP, self.settings.consumer,
                                             min_idle_time=self.settings.claim_idle_ms, start_id="0-0",
                                             count=self.settings.batch)
        entries = [(eid, fields) for eid, fields in result[1] if fields]
        deleted = [eid for eid, fields in result[1] if not fields]  # trimmed while pending: nothing to write
        if deleted:
            self.client.xack(keys.EVENTS_STREAM, keys.SINK_GROUP, *deleted)
        CLAIMED.inc(len(entries))
        return entries

    def _read(self, block_ms: int | None, entry_id: str = ">") -> list[tuple[bytes, dict[bytes, bytes]]]:
        """New entries (`>`), or this consumer's own pending ones (`0`)."""
        result: Any = self.client.xreadgroup(keys.SINK_GROUP, self.settings.consumer, {keys.EVENTS_STREAM: entry_id},
                                             count=self.settings.batch, block=block_ms)
        return [(eid, fields) for _, messages in (result or []) for eid, fields in messages if fields]

    def _done(self, entry_id: bytes) -> None:
        pipe = self.client.pipeline()
        pipe.xack(keys.EVENTS_STREAM, keys.SINK_GROUP, entry_id)
        pipe.xdel(keys.EVENTS_STREAM, entry_id)
        pipe.execute()

    def _dead_letter(self, entry_id: bytes, fields: dict[bytes, bytes], error: str) -> None:
        dead: dict[Any, Any] = {k: v for k, v in fields.items() if k != b"png"}
        dead.update({b"error": error.encode(), b"source_id": entry_id})
        png = fields.get(b"png")
        if png is not None:
            key = f"{DEAD_LETTER_PREFIX}/{entry_id.decode()}.png"
            try:
                self.writer.store.put(key, png, "image/png")
                dead[b"png_key"] = key.encode()
            except Exception as exc:  # the store failed too: keep Redis bounded, say what was lost
                dead[b"png_dropped"] = f"{len(png)} bytes: {exc!r}".encode()
        self.client.xadd(keys.DEAD_LETTER_STREAM, dead, maxlen=self.settings.dead_letter_max, approximate=True)
        self._done(entry_id)
        DEAD.inc()
        log.error("dead-lettered %s: %s", entry_id, error)

    def _deliveries(self, entry_id: bytes) -> int:
        info: Any = self.client.xpending_range(keys.EVENTS_STREAM, keys.SINK_GROUP, min=entry_id, max=entry_id,
                                               count=1)
        return int(info[0]["times_delivered"]) if info else 0

    def handle(self, entry_id: bytes, fields: dict[bytes, bytes]) -> bool:
        """Persist one entry and ack it; False when the write failed (left pending for a retry)."""
        try:
            event, png = decode_event(fields)
        except ValueError as exc:
            self._dead_letter(entry_id, fields, f"undecodable: {exc}")
            return True
        started = time.perf_counter()
        lock = self.client.lock(keys.sink_lock(self.writer.prefix(event)), timeout=self.settings.lock_timeout_s,
                                blocking_timeout=self.settings.lock_timeout_s)
        try:
            if not lock.acquire():
                log.warning("trajectory of %s locked by another sink: left pending", entry_id)
                return False
            try:
                written = self.writer.write(event, png)
            finally:
                try:
                    lock.release()
                except redis.exceptions.LockError:
                    log.warning("lock on the trajectory of %s expired during its write", entry_id)
        except redis.RedisError:
            raise
        except Exception as exc:  # the store failed: keep the entry pending, retry it
            if not self.writer.store.healthy():
                self.outage = True
                log.warning("object store down, write of %s left pending: %r", entry_id, exc)
                return False
            if self._deliveries(entry_id) >= self.settings.max_deliveries:
                self._dead_letter(entry_id, fields, f"write failed {self.settings.max_deliveries} times: {exc!r}")
                return True
            log.warning("write of %s failed (will retry): %r", entry_id, exc)
            return False
        WRITE_SECONDS.observe(time.perf_counter() - started)
        (WRITTEN.labels(fields.get(b"type", b"?").decode()) if written else DROPPED).inc()
        self._done(entry_id)
        return True

    def process_once(self, block_ms: int | None = None) -> int:
        """One round: after a failed write its own pending entries; else claimed entries, then new ones
        (blocking up to `block_ms`). Stops at the first entry it could not write (the rest stay pending,
        in order). Returns entries persisted."""
        retrying = self.outage or self._backoff_s > 0
        self.outage = False
        entries = self._read(None, "0") if retrying else []
        if not entries:
            entries = self._claim() or self._read(block_ms)
        persisted = 0
        for entry_id, fields in entries:
            if not self.handle(entry_id, fields):
                self._backoff_s = min(max(self._backoff_s * 2, 1.0), self.settings.outage_backoff_max_s)
                return persisted
            persisted += 1
        self._backoff_s = 0.0
        return persisted

    def run_forever(self, stop: threading.Event) -> None:
        """Consume until `stop` is set; Redis errors are logged and the round retried."""
        while not stop.is_set():
            try:
                self.ensure_group()
                break
            except redis.RedisError as exc:
                log.warning("redis unavailable: %s; retrying", exc)
                stop.wait(1.0)
        while not stop.is_set():
            try:
                self.process_once(block_ms=self.settings.block_ms)
                if self._backoff_s:
                    stop.wait(self._backoff_s)
            except redis.ResponseError as exc:
                log.warning("redis error: %s; re-creating the group and retrying", exc)
                if "NOGROUP" in str(exc):
                    self._ensure_group_quietly()
                stop.wait(1.0)
            except redis.RedisError as exc:
                log.warning("redis unavailable: %s; retrying", exc)
                stop.wait(1.0)

    def _ensure_group_quietly(self) -> None:
        try:
            self.ensure_group()
        except redis.RedisError as exc:
            log.warning("cannot create the consumer group yet: %s", exc)
