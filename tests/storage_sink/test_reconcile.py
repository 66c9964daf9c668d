"""The blob reconciliation rule (services/storage_sink/reconcile.py) against a real redis-server and a local
directory or moto's S3 server: a blob last put more than `ttl_s` before both now and the oldest entry still
in the event streams is deleted, every other blob kept. "Now" is moved forward with the reconciler's clock
(S3 sets last-modified times itself), never by sleeping."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import redis

from common import keys
from common.blob_keys import blob_key
from common.events import EpisodeEvent, StepEvent
from common.eventshards import shard_of
from common.objectstore import LocalDirStore, ObjectStore, S3Store
from common.polling import free_port
from common.status import RolloutStatus
from services.runner.publisher import EventPublisher
from services.storage_sink.consumer import SinkConsumer
from services.storage_sink.reconcile import BlobReconciler, entry_time_s
from services.storage_sink.settings import SinkSettings
from services.storage_sink.writer import TrajectoryWriter

TTL_S = 3600.0
REF = {"run_id": "run-1", "task_id": "task-a", "rollout_index": 0, "rollout_id": "run-1:task-a:0"}
STREAMS = [keys.events_stream(0), keys.events_stream(1)]


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalDirStore(tmp_path / "store")
    return S3Store(f"b-{free_port()}", request.getfixturevalue("s3_endpoint"), "testing", "testing")


def reconciler(redis_url: str, store: ObjectStore, ahead_s: float) -> BlobReconciler:
    """A reconciler whose clock runs `ahead_s` seconds ahead of the machine's."""
    return BlobReconciler(redis.Redis.from_url(redis_url), store, STREAMS, TTL_S, clock=lambda: time.time() + ahead_s)


def test_an_orphan_blob_is_deleted_once_older_than_the_ttl(redis_url: str, store: ObjectStore) -> None:
    """The runner put a screenshot and died before publishing its event: no entry names the blob."""
    publisher = EventPublisher(redis.Redis.from_url(redis_url), 1 << 26, 5.0, blobs=store)
    orphan = publisher.put_file(b"\x89PNG orphan", "image/png", ".png")
    assert orphan is not None and store.get(orphan) == b"\x89PNG orphan"
    early = reconciler(redis_url, store, ahead_s=TTL_S - 60).run_once()  # a minute before the ttl is up
    assert (early.seen, early.deleted) == (1, 0) and store.list("_blobs/") == [orphan]
    late = reconciler(redis_url, store, ahead_s=TTL_S + 60).run_once()
    assert (late.seen, late.deleted, late.kept) == (1, 1, 0) and store.list("_blobs/") == []


def test_a_blob_an_unwritten_entry_names_is_kept_however_old(redis_url: str, store: ObjectStore) -> None:
    """The sink was down for longer than the ttl: the oldest entry still in a stream (any shard) holds the
    cutoff back, so the blob its event names survives; once written, the trajectory has its copy and the
    blob goes."""
    client = redis.Redis.from_url(redis_url)
    publisher = EventPublisher(client, 1 << 26, 5.0, shards=2, blobs=store)
    run_id = next(r for r in (f"run-{i}" for i in range(50)) if shard_of(r, 2) == 1)  # the second shard
    ref = {**REF, "run_id": run_id}
    publisher.publish(EpisodeEvent(phase="start", **ref))
    publisher.publish(StepEvent(step=0, **ref), b"\x89PNG step 0")
    key = blob_key(b"\x89PNG step 0")
    ((entry_id, _),) = client.xrange(keys.events_stream(1), count=1)
    days_later = reconciler(redis_url, store, ahead_s=10 * TTL_S)
    assert days_later.cutoff() == pytest.approx(entry_time_s(entry_id) - TTL_S, abs=1e-3)
    assert days_later.run_once().deleted == 0 and store.list("_blobs/") == [key]

    settings = SinkSettings(redis_url=redis_url, consumer="c1", event_shards=2)
    sink = SinkConsumer(client, TrajectoryWriter(store), settings, keys.events_stream(1))
    sink.ensure_group()
    publisher.publish(EpisodeEvent(phase="end", status=RolloutStatus.COMPLETED, reward=1.0, num_steps=1, **ref))
    while sink.process_once():
        pass
    assert client.xlen(keys.events_stream(1)) == 0
    assert days_later.run_once().deleted == 1 and store.list("_blobs/") == []
    assert store.get(f"{run_id}/task-a_0/image_0000.png") == b"\x89PNG step 0"  # the copy outlives the blob


def test_a_recent_put_of_a_shared_blob_keeps_it(redis_url: str, tmp_path: Path) -> None:
    """Content addressing: a second rollout showing the same screen re-puts the same key; the last put counts."""
    store = LocalDirStore(tmp_path)
    key = blob_key(b"\x89PNG desktop")
    store.put(key, b"\x89PNG desktop")
    old = time.time() - 2 * TTL_S
    os.utime(tmp_path / key, (old, old))  # put two ttls ago...
    assert reconciler(redis_url, store, 0).cutoff() > old
    store.put(key, b"\x89PNG desktop")  # ...and again now, by another rollout
    assert reconciler(redis_url, store, 0).run_once().deleted == 0 and store.list("_blobs/") == [key]


def test_one_sink_at_a_time_reconciles(redis_url: str, tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_url)
    lock = client.lock(keys.BLOB_RECONCILE_LOCK, timeout=60)
    assert lock.acquire(blocking=False)  # another sink's round under way
    report = reconciler(redis_url, LocalDirStore(tmp_path), TTL_S * 2).run_once()
    assert report.cutoff is None and report.seen == 0
    lock.release()
    assert reconciler(redis_url, LocalDirStore(tmp_path), TTL_S * 2).run_once().cutoff is not None
    assert client.get(keys.BLOB_RECONCILE_LOCK) is None  # released after the round


def test_trajectories_are_never_touched(redis_url: str, store: ObjectStore) -> None:
    store.put("run-1/task-a_0/image_0000.png", b"png")
    store.put("_dead_letters/1-0.png", b"png")
    assert reconciler(redis_url, store, 100 * TTL_S).run_once().seen == 0
    assert store.list("run-1/") == ["run-1/task-a_0/image_0000.png"] and store.list("_dead_letters/")


def test_stream_entry_ids_are_read_as_xadd_times() -> None:
    assert entry_time_s(b"1700000000123-7") == 1_700_000_000.123
    assert entry_time_s("5-0") == 0.005
