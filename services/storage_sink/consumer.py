"""Redis Stream consumer of the sink: at-least-once, ack after the durable write (SPEC section 7).

One round reads a batch (`stream_group.StreamGroup`: claimed entries of dead sinks, new entries, or
after a failed write this consumer's own pending ones), writes it while the next batch is read, and
acknowledges what was written. The batch's trajectories are written in parallel, and so are a
trajectory's consecutive steps (one put task per step, at most `workers` at once); each trajectory's
entries in stream order, its manifest only after every entry before it (`batch.py`), each trajectory
under its Redis lock (`locks.BatchLocks`). An entry that cannot be decoded, or whose write failed
`max_deliveries` times while the store was otherwise healthy, is dead-lettered (`dead_letters.py`). A
step whose blob is missing from the store (`writer.MissingBlob`) fails like any write while the store
is healthy: retried, then dead-lettered; one whose blob's content does not match its name (`writer.CorruptBlob`)
is dead-lettered at once (its step record kept there, the blob never copied into the trajectory).

While the store is down (a write fails and `ObjectStore.healthy()` is false) nothing is dead-lettered:
the consumer backs off (`outage.rounds_until_written`) and retries its own pending entries first, so an
outage of any length loses nothing. A Redis error (NOGROUP after a Redis restart without its data, a
connection loss) never ends the loop: the group is re-created, the round retried. A consumer reads one
stream (one shard of the events, `common.eventshards`); a sink runs one per shard it is assigned
(`services/storage_sink/__main__.py`).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait

import redis
from prometheus_client import Counter, Histogram

from common import attempts, keys
from common.events import decode_event, png_key_of, record_key_of
from services.storage_sink.batch import Entry, Outcome, TrajectoryBatch
from services.storage_sink.dead_letters import DeadLetters
from services.storage_sink.locks import BatchLocks
from services.storage_sink.outage import rounds_until_written
from services.storage_sink.settings import SinkSettings
from services.storage_sink.stream_group import Entries, StreamGroup, in_stream_order
from services.storage_sink.writer import CorruptBlob, TrajectoryWriter, UnconfirmedAttempt

log = logging.getLogger(__name__)

WRITTEN = Counter("cua_sink_events_written_total", "Events persisted", ["type"])
DROPPED = Counter("cua_sink_events_stale_total", "Events of superseded attempts dropped")
WRITE_SECONDS = Histogram("cua_sink_write_seconds", "Time to persist one event")


class SinkConsumer:
    """One consumer of group `keys.SINK_GROUP` on `stream` (one event shard, `common.eventshards`;
    `keys.EVENTS_STREAM` by default)."""

    def __init__(self, client: redis.Redis, writer: TrajectoryWriter, settings: SinkSettings,
                 stream: str = keys.EVENTS_STREAM) -> None:
        self.client = client
        self.stream = stream
        self.writer = writer
        self.settings = settings
        self.group = StreamGroup(client, stream, settings)
        self.dead_letters = DeadLetters(client, writer.store, stream, settings.dead_letter_max)
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

    def ensure_group(self) -> None:
        """Create the consumer group (and the stream) if missing. Raises: redis.RedisError."""
        self.group.ensure()

    def _dead_letter(self, entry_id: bytes, fields: dict[bytes, bytes], error: str) -> None:
        self.dead_letters.add(entry_id, fields, error)
        self.group.done(entry_id)

    def close(self) -> None:
        """Stop the worker threads (after the puts under way)."""
        self._reader.shutdown()
        self._trajectories.shutdown()
        self._puts.shutdown()

    def _counted(self, rollout_id: str) -> int:
        """The runners' count of the rollout's attempts (`common.attempts`). Raises: redis.RedisError."""
        return attempts.current(self.client, rollout_id)

    def _failed(self, entry: Entry, exc: Exception) -> bool:
        """An entry's write raised: True when it was dead-lettered (disposed of), False when it stays
        pending (the store is down: an outage; or it has deliveries left). An unconfirmed attempt's start is
        dead-lettered at once (a retry cannot change it). Raises: redis.RedisError."""
        if isinstance(exc, redis.RedisError):
            raise exc
        if isinstance(exc, UnconfirmedAttempt):
            log.error("%s", exc)
            self._dead_letter(entry.entry_id, entry.fields, str(exc))
            return True
        if not self.writer.store.healthy():
            self.outage = True
            log.warning("object store down, write of %s left pending: %r", entry.entry_id, exc)
            return False
        if isinstance(exc, CorruptBlob):  # its content will not change by retrying: kept aside at once
            self._dead_letter(entry.entry_id, entry.fields, f"not written: {exc}")
            return True
        if self.group.deliveries(entry.entry_id) >= self.settings.max_deliveries:
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
            outcomes = TrajectoryBatch(self.writer, self._puts, prefix, self._failed, self._counted).write(entries)
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
            return TrajectoryBatch(self.writer, self._puts, prefix, self._failed, self._counted).write(entries)
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
                png_key, record_key = png_key_of(fields), record_key_of(fields)
                prefix = self.writer.prefix(event)
            except ValueError as exc:
                self._dead_letter(entry_id, fields, f"undecodable: {exc}")
                dead += 1
                continue
            groups.setdefault(prefix, []).append(Entry(entry_id, fields, event, png, png_key, record_key))
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
            self.group.done(*finished)
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
        entries = self.group.read(None, "0") if retrying else []
        self._own_pending = bool(entries)  # up to `batch` were read: read again until none is left
        if not entries:
            entries = in_stream_order(self.group.claim(), ahead) or self.group.read(block_ms)
        if not entries:
            return 0
        reading = None if retrying else self._reader.submit(self.group.read, None)
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
        while not stop.is_set():
            try:
                # Rounds until one leaves nothing pending, backing off between them.
                rounds_until_written(self._round_left_pending, stop, self.settings.outage_backoff_max_s)
            except redis.ResponseError as exc:
                log.warning("redis error: %s; re-creating the group and retrying", exc)
                if "NOGROUP" in str(exc):
                    self._ensure_group_quietly()
                stop.wait(1.0)
            except redis.RedisError as exc:
                log.warning("redis unavailable: %s; retrying", exc)
                stop.wait(1.0)
        self._finish_read_ahead()

    def _round_left_pending(self) -> bool:
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
