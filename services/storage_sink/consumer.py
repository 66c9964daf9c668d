"""Redis Stream consumer of the sink: at-least-once, ack after the durable write (SPEC section 7).

Each round first takes over entries another consumer left pending for longer than `claim_idle_ms`
(XAUTOCLAIM: a dead sink's work), then reads new ones (XREADGROUP `>`), up to `batch` entries either
way; the next batch is read while one is written. The batch's trajectories are written in parallel,
and so are a trajectory's consecutive steps (one put task per step, at most `workers` at once); each
trajectory's entries in stream order, its manifest only after every entry before it
(services/storage_sink/batch.py). An entry is acknowledged and deleted from the stream only after
its objects are written (one XACK + XDEL per batch), so XLEN is the unpersisted backlog that runners
watch for backpressure. Undecodable entries, and entries
whose write failed more than `max_deliveries` times while the store was otherwise healthy, go to the
dead-letter stream, which is capped at `dead_letter_max` entries (approximate MAXLEN); a dead
letter's PNG is stored aside in the object store (`_dead_letters/{entry_id}.png`; of event shard n > 0:
`_dead_letters/shard-{n}/{entry_id}.png`) and the entry keeps only its key and its source stream.
A consumer reads one stream (one shard of the events, `common.eventshards`); a sink runs one per shard
it is assigned (`services/storage_sink/__main__.py`).

While the store is down (a write fails and `ObjectStore.healthy()` is false) nothing is dead-lettered:
the consumer backs off (tenacity: 1 s doubling to `outage_backoff_max_s`, plus up to 1 s of random
jitter, so sinks do not retry in step) and retries its own pending entries first (XREADGROUP `0`),
so an outage of any length loses nothing. Writes of one trajectory are
serialised across sinks by a Redis lock (`keys.sink_lock`), held while a batch writes it (the locks
of a batch's trajectories taken in one pipeline and released in one script: `BatchLocks`). A Redis
error (NOGROUP after a Redis restart without its data, a connection loss) never ends the loop: the
group is re-created, the round retried.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import redis
import tenacity
from prometheus_client import Counter, Histogram

from common import keys
from common import redis_typed as rt
from common.events import decode_event
from services.storage_sink.batch import Entry, Outcome, TrajectoryBatch
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


Entries = list[tuple[bytes, dict[bytes, bytes]]]


def _in_order(*batches: Entries) -> Entries:
    """The entries of `batches` once each (by id), in stream order."""
    unique = {entry_id: fields for batch in batches for entry_id, fields in batch}
    return sorted(unique.items(), key=lambda item: tuple(int(part) for part in item[0].split(b"-")))


#: Deletes each of KEYS whose value is ARGV[1] (the batch's lock token); returns how many it deleted.
_RELEASE_ALL = """
local released = 0
for _, key in ipairs(KEYS) do
    if redis.call('get', key) == ARGV[1] then
        redis.call('del', key)
        released = released + 1
    end
end
return released
"""


class BatchLocks:
    """The `keys.sink_lock` of every trajectory of a batch, taken without waiting in one pipeline (one
    `SET NX PX` each, one token for the batch) and released in one script call: two round trips per
    batch instead of two per trajectory (each cost ~0.1 ms of CPU; a batch has up to `batch`
    trajectories). The values are those of a redis-py `Lock` (a token; released only by its owner),
    so a sink taking the lock with `Redis.lock` excludes this one and the reverse. A trajectory whose
    lock is held elsewhere is not in `held`: the caller waits for it with a `Redis.lock` of its own.
    Every lock's timeout (`lock_timeout_s`) runs from the batch's start, not from its trajectory's turn
    in the trajectory pool: a batch writing longer than that is logged (`release`), as a trajectory
    was before."""

    def __init__(self, client: redis.Redis, prefixes: list[str], timeout_s: float) -> None:
        self.client = client
        self.token = uuid.uuid4().hex.encode()
        self.held: set[str] = set()
        if not prefixes:  # every entry of the batch was dead-lettered
            return
        pipe = client.pipeline(transaction=False)
        for prefix in prefixes:
            pipe.set(keys.sink_lock(prefix), self.token, nx=True, px=int(timeout_s * 1000))
        try:
            taken = pipe.execute()
        except redis.RedisError:
            self.held = set(prefixes)  # some may have been taken before the error: release them all
            self.release()
            raise
        self.held = {prefix for prefix, ok in zip(prefixes, taken, strict=True) if ok}

    def release(self) -> None:
        """Release the locks still ours; a lock that expired meanwhile is logged. A Redis error is logged
        too (the locks then expire after their timeout)."""
        if not self.held:
            return
        names = [keys.sink_lock(prefix) for prefix in sorted(self.held)]
        try:
            released = rt.script_int(self.client.eval(_RELEASE_ALL, len(names), *names, self.token.decode()))
        except redis.RedisError as exc:
            log.warning("could not release the locks of %d trajectories (they expire): %r", len(names), exc)
            return
        finally:
            self.held = set()
        if released < len(names):
            log.warning("%d of %d trajectory locks expired during the batch's write", len(names) - released,
                        len(names))


class SinkConsumer:
    """One consumer of group `keys.SINK_GROUP` on `stream` (one event shard, `common.eventshards`;
    `keys.EVENTS_STREAM` by default)."""

    def __init__(self, client: redis.Redis, writer: TrajectoryWriter, settings: SinkSettings,
                 stream: str = keys.EVENTS_STREAM) -> None:
        self.client = client
        self.stream = stream
        self.writer = writer
        self.settings = settings
        self.outage = False
        #: The last round left entries pending (a write failed): the next rounds retry them, backing off.
        self.left_pending = False
        #: Object puts run here (at most `workers` at once); trajectories of a batch on the other pool,
        #: whose tasks wait for their puts (two pools: a task never waits for its own pool).
        self._puts = ThreadPoolExecutor(settings.workers, thread_name_prefix="sink-put")
        self._trajectories = ThreadPoolExecutor(settings.workers, thread_name_prefix="sink-trajectory")
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="sink-read-ahead")
        self._ahead: Entries = []
        self._own_pending = False  # entries pending on this consumer to re-read (XREADGROUP `0`) first

    def close(self) -> None:
        """Stop the worker threads (after the puts under way)."""
        self._reader.shutdown()
        self._trajectories.shutdown()
        self._puts.shutdown()

    def ensure_group(self) -> None:
        """Create the consumer group (and the stream) if missing."""
        try:
            self.client.xgroup_create(self.stream, keys.SINK_GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def _claim(self) -> Entries:
        result: Any = self.client.xautoclaim(self.stream, keys.SINK_GROUP, self.settings.consumer,
                                             min_idle_time=self.settings.claim_idle_ms, start_id="0-0",
                                             count=self.settings.batch)
        entries = [(eid, fields) for eid, fields in result[1] if fields]
        deleted = [eid for eid, fields in result[1] if not fields]  # trimmed while pending: nothing to write
        if deleted:
            self.client.xack(self.stream, keys.SINK_GROUP, *deleted)
        CLAIMED.inc(len(entries))
        return entries

    def _read(self, block_ms: int | None, entry_id: str = ">") -> Entries:
        """New entries (`>`), or this consumer's own pending ones (`0`)."""
        result: Any = self.client.xreadgroup(keys.SINK_GROUP, self.settings.consumer, {self.stream: entry_id},
                                             count=self.settings.batch, block=block_ms)
        return [(eid, fields) for _, messages in (result or []) for eid, fields in messages if fields]

    def _done(self, *entry_ids: bytes) -> None:
        """Acknowledge and delete entries (one round trip)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.xack(self.stream, keys.SINK_GROUP, *entry_ids)
        pipe.xdel(self.stream, *entry_ids)
        pipe.execute()

    def _dead_letter(self, entry_id: bytes, fields: dict[bytes, bytes], error: str) -> None:
        dead: dict[Any, Any] = {k: v for k, v in fields.items() if k != b"png"}
        dead.update({b"error": error.encode(), b"source_id": entry_id, b"source_stream": self.stream.encode()})
        png = fields.get(b"png")
        if png is not None:
            # Entry ids repeat across shards: a shard's own folder (shard 0 keeps the folder of one stream).
            shard = self.stream.removeprefix(keys.EVENTS_STREAM).strip(":")
            key = f"{DEAD_LETTER_PREFIX}/{f'shard-{shard}/' if shard else ''}{entry_id.decode()}.png"
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
        info: Any = self.client.xpending_range(self.stream, keys.SINK_GROUP, min=entry_id, max=entry_id,
                                               count=1)
        return int(info[0]["times_delivered"]) if info else 0

    def _failed(self, entry: Entry, exc: Exception) -> bool:
        """An entry's write raised: True when it was dead-lettered (disposed of), False when it stays
        pending (the store is down: an outage; or it has deliveries left). Raises: redis.RedisError."""
        if isinstance(exc, redis.RedisError):
            raise exc
        if not self.writer.store.healthy():
            self.outage = True
            log.warning("object store down, write of %s left pending: %r", entry.entry_id, exc)
            return False
        if self._deliveries(entry.entry_id) >= self.settings.max_deliveries:
            self._dead_letter(entry.entry_id, entry.fields,
                              f"write failed {self.settings.max_deliveries} times: {exc!r}")
            return True
        log.warning("write of %s failed (will retry): %r", entry.entry_id, exc)
        return False

    def _write_trajectory(self, prefix: str, entries: list[Entry], locked: bool) -> dict[bytes, Outcome]:
        """Write one trajectory's entries under its Redis lock: `locked` when the batch holds it
        (`BatchLocks`), else it is waited for here (all pending when another sink keeps it)."""
        started = time.perf_counter()
        if locked:
            outcomes = TrajectoryBatch(self.writer, self._puts, prefix, self._failed).write(entries)
        else:
            outcomes = self._write_waiting_for_lock(prefix, entries)
        elapsed = (time.perf_counter() - started) / len(entries)
        for entry in entries:
            if outcomes[entry.entry_id] is Outcome.WRITTEN:
                WRITE_SECONDS.observe(elapsed)
                WRITTEN.labels(entry.fields.get(b"type", b"?").decode()).inc()
            elif outcomes[entry.entry_id] is Outcome.DROPPED:
                DROPPED.inc()
        return outcomes

    def _write_waiting_for_lock(self, prefix: str, entries: list[Entry]) -> dict[bytes, Outcome]:
        """Wait (up to `lock_timeout_s`) for a trajectory's lock held by another sink, then write."""
        lock = self.client.lock(keys.sink_lock(prefix), timeout=self.settings.lock_timeout_s,
                                blocking_timeout=self.settings.lock_timeout_s)
        if not lock.acquire():
            log.warning("trajectory %s locked by another sink: %d entries left pending", prefix, len(entries))
            return {entry.entry_id: Outcome.PENDING for entry in entries}
        try:
            return TrajectoryBatch(self.writer, self._puts, prefix, self._failed).write(entries)
        finally:
            try:
                lock.release()
            except redis.exceptions.LockError:
                log.warning("lock on trajectory %s expired during its write", prefix)

    def _decode(self, entries: Entries) -> tuple[dict[str, list[Entry]], int]:
        """Entries grouped by trajectory prefix (stream order kept in each group); undecodable ones are
        dead-lettered here. Returns (groups, number dead-lettered)."""
        groups: dict[str, list[Entry]] = {}
        dead = 0
        for entry_id, fields in entries:
            try:
                event, png = decode_event(fields)
                prefix = self.writer.prefix(event)
            except ValueError as exc:
                self._dead_letter(entry_id, fields, f"undecodable: {exc}")
                dead += 1
                continue
            groups.setdefault(prefix, []).append(Entry(entry_id, fields, event, png))
        return groups, dead

    def persist(self, entries: Entries) -> tuple[int, int]:
        """Write a batch: trajectories in parallel (their step puts too), each in stream order, then one
        XACK + XDEL of every entry written or dropped. Returns (entries done, entries left pending).
        Raises: redis.RedisError (nothing of this batch acknowledged; a redelivery is idempotent)."""
        groups, done = self._decode(entries)
        locks = BatchLocks(self.client, list(groups), self.settings.lock_timeout_s)
        try:
            if len(groups) == 1:
                ((prefix, group),) = groups.items()
                results = [self._write_trajectory(prefix, group, prefix in locks.held)]
            else:
                futures = [self._trajectories.submit(self._write_trajectory, prefix, group, prefix in locks.held)
                           for prefix, group in groups.items()]
                wait(futures)  # all of them, even when one raised: no write outlives its round
                results = [future.result() for future in futures]
        finally:
            locks.release()
        outcomes = {entry_id: outcome for result in results for entry_id, outcome in result.items()}
        finished = [entry_id for entry_id, outcome in outcomes.items() if outcome in (Outcome.WRITTEN, Outcome.DROPPED)]
        if finished:
            self._done(*finished)
        pending = sum(outcome is Outcome.PENDING for outcome in outcomes.values())
        return done + len(outcomes) - pending, pending

    def handle(self, entry_id: bytes, fields: dict[bytes, bytes]) -> bool:
        """Persist one entry and ack it; False when the write failed (left pending for a retry)."""
        return self.persist([(entry_id, fields)])[1] == 0

    def process_once(self, block_ms: int | None = None) -> int:
        """One round: after a failed write its own pending entries (round after round until none is
        left); else claimed entries and the new ones read ahead during the previous round (in stream
        order), or when there are neither, new ones (blocking up to `block_ms`). They are written by
        `persist` while the next new entries are read (not blocking). A trajectory stops at its first
        entry it could not write (its later entries stay pending, in order); the other trajectories of
        the batch are written. After a round that left entries pending, the entries read ahead are let
        go: they are pending on this consumer and come back, in order, with the retry's own pending
        entries. Returns entries persisted (or dead-lettered)."""
        retrying = self.outage or self._own_pending
        self.outage = False
        self.left_pending = False
        ahead, self._ahead = self._ahead, []
        entries = self._read(None, "0") if retrying else []
        self._own_pending = bool(entries)  # up to `batch` were read: read again until none is left
        if not entries:
            entries = _in_order(self._claim(), ahead) or self._read(block_ms)
        if not entries:
            return 0
        reading = None if retrying else self._reader.submit(self._read, None)
        try:
            persisted, pending = self.persist(entries)
        finally:
            following = reading.result() if reading is not None else []
        if pending:
            self.left_pending = self._own_pending = True
        else:
            self._ahead = following
        return persisted

    def run_forever(self, stop: threading.Event) -> None:
        """Consume until `stop` is set (then write the batch read ahead, if any); Redis errors are logged
        and the round retried."""
        while not stop.is_set():
            try:
                self.ensure_group()
                break
            except redis.RedisError as exc:
                log.warning("redis unavailable: %s; retrying", exc)
                stop.wait(1.0)
        def pause(seconds: float) -> None:
            stop.wait(seconds)

        # Rounds until one leaves nothing pending, backing off between them (reset by a round that wrote all).
        rounds = tenacity.Retrying(
            retry=tenacity.retry_if_result(bool),
            wait=tenacity.wait_exponential(multiplier=1.0, max=self.settings.outage_backoff_max_s)
            + tenacity.wait_random(0, 1.0),
            stop=lambda _state: stop.is_set(), sleep=pause, retry_error_callback=lambda _state: True)
        while not stop.is_set():
            try:
                rounds(self._round_left_pending, stop)
            except redis.ResponseError as exc:
                log.warning("redis error: %s; re-creating the group and retrying", exc)
                if "NOGROUP" in str(exc):
                    self._ensure_group_quietly()
                stop.wait(1.0)
            except redis.RedisError as exc:
                log.warning("redis unavailable: %s; retrying", exc)
                stop.wait(1.0)
        self._finish_read_ahead()

    def _round_left_pending(self, stop: threading.Event) -> bool:
        if stop.is_set():  # stopped during a back-off: no round after that
            return False
        self.process_once(block_ms=self.settings.block_ms)
        return self.left_pending

    def _finish_read_ahead(self) -> None:
        """On stop: write the batch read ahead rather than leave it pending for `claim_idle_ms`."""
        ahead, self._ahead = self._ahead, []
        if ahead:
            try:
                self.persist(ahead)
            except redis.RedisError as exc:
                log.warning("read-ahead batch left pending (another sink claims it): %s", exc)

    def _ensure_group_quietly(self) -> None:
        try:
            self.ensure_group()
        except redis.RedisError as exc:
            log.warning("cannot create the consumer group yet: %s", exc)
