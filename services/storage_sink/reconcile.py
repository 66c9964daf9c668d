"""Reconciliation of the blobs runners put (`common.blobs`): nothing the runners put stays behind.

A runner puts a step's screenshot (and an evaluation's files) under `_blobs/{sha256}` right before it
publishes the event naming it; the sink copies the blob into the trajectory (`image_{step:04d}.png`,
`evidence/{name}`) when it writes the event, and deletes the stream entry once written. A blob is only
ever needed until every event naming it is written, so blobs are a staging area, and the rule is:

    A blob is deleted when it was last put more than `ttl_s` seconds before both now and the oldest
    entry still in any event stream; every other blob is kept.

Why it is safe: an event that names a blob is published after the blob's put (the put follows the
backpressure wait and precedes the XADD by the put's own time; an end event's evaluation files by the
env's release and at most `RUNNER_FINISH_RETRY_S`), so while that event is unwritten it is in a stream
(entry ids are its XADD time in ms) or about to be, and the blob's last put is less than `ttl_s` before
it. Every put rewrites the blob's last-modified time, so a blob shared by many rollouts (the same first
screen) lives `ttl_s` past its latest put. A sink outage of any length keeps every blob: the oldest
unwritten entry holds the cutoff back. Blobs of written events have their copies in the trajectory and
go after `ttl_s`.

Why it finds orphans: a put whose event never comes (the runner died between the put and the XADD, or its
attempt was superseded) is a blob no entry names; it is deleted `ttl_s` after its put, once older entries
are written. With `ttl_s` = 3600 (the default) the staging area holds about an hour of step files.

Clocks: last-modified times are the store's, entry ids Redis', now the sink's; skews up to a fraction
of `ttl_s` do not matter. One sink at a time runs a round (`keys.BLOB_RECONCILE_LOCK`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from prometheus_client import Counter, Gauge

from common import keys
from common.blob_keys import BLOB_PREFIX
from common.objectstore import ObjectStore

log = logging.getLogger(__name__)

DELETED = Counter("cua_sink_blobs_deleted_total", "Blobs deleted by the reconciliation")
KEPT = Gauge("cua_sink_blobs_kept", "Blobs kept by the last reconciliation round")


@dataclass(frozen=True)
class RoundReport:
    """One round: blobs seen, deleted and kept, and the cutoff used (s since the epoch; None: no round,
    another sink held the lock)."""

    seen: int
    deleted: int
    kept: int
    cutoff: float | None


def entry_time_s(entry_id: bytes | str) -> float:
    """The XADD time of a stream entry id `<ms>-<seq>`, in seconds since the epoch (Redis' clock)."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[0]) / 1000.0


class BlobReconciler:
    """Deletes the blobs of `store` that the rule (module docstring) lets go. `streams`: every event
    stream (all shards, not only the ones this sink consumes); `clock`: now in seconds since the epoch."""

    def __init__(self, client: redis.Redis, store: ObjectStore, streams: list[str], ttl_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.store = store
        self.streams = streams
        self.ttl_s = ttl_s
        self.clock = clock

    def oldest_entry_s(self) -> float | None:
        """The XADD time (s) of the oldest entry left in any of the streams (not yet written), or None."""
        pipe = self.client.pipeline(transaction=False)
        for stream in self.streams:
            pipe.xrange(stream, "-", "+", count=1)
        firsts: list[Any] = pipe.execute()
        times = [entry_time_s(entries[0][0]) for entries in firsts if entries]
        return min(times) if times else None

    def cutoff(self) -> float:
        """Blobs last put before this time (s since the epoch) are deleted: `ttl_s` before the earlier of
        now and the oldest unwritten entry."""
        now = self.clock()
        oldest = self.oldest_entry_s()
        return min(now, oldest if oldest is not None else now) - self.ttl_s

    def run_once(self, lock_s: float = 600.0) -> RoundReport:
        """One round under the reconcile lock (held up to `lock_s` s): list the blobs, delete those older
        than `cutoff()`. The cutoff is taken before the listing, so a blob put meanwhile is never older.
        Raises: redis.RedisError; the store's errors (the round stops; the next one starts over)."""
        lock = self.client.lock(keys.BLOB_RECONCILE_LOCK, timeout=lock_s)
        if not lock.acquire(blocking=False):
            return RoundReport(0, 0, 0, None)
        try:
            cutoff = self.cutoff()
            blobs = self.store.list_modified(f"{BLOB_PREFIX}/")
            deleted = 0
            for key, modified in blobs:
                if modified < cutoff:
                    self.store.delete(key)
                    deleted += 1
            DELETED.inc(deleted)
            KEPT.set(len(blobs) - deleted)
            if deleted:
                log.info("blob reconciliation: %d of %d blobs deleted (last put before %.0f)", deleted, len(blobs),
                         cutoff)
            return RoundReport(len(blobs), deleted, len(blobs) - deleted, cutoff)
        finally:
            try:
                lock.release()
            except redis.exceptions.LockError:
                log.warning("blob reconciliation outlasted its lock (%.0f s)", lock_s)

    def run_forever(self, stop: Any, interval_s: float) -> None:
        """A round every `interval_s` seconds until `stop` (a `threading.Event`) is set; errors are logged
        and the next round tries again."""
        while not stop.wait(interval_s):
            try:
                self.run_once(lock_s=max(interval_s, 60.0))
            except Exception:  # Redis or the store down (or a bug: the traceback shows): the next round starts over
                log.exception("blob reconciliation round failed")
