"""Sink batches against a real redis-server and real local stores (issue 13): several trajectories
interleaved in one batch, puts in parallel that keep each trajectory's order (a manifest only after
the entries before it), a failed put that holds back the rest of its trajectory only, the batch read
ahead let go after a failure, no listing outside the trajectory at episode start and end, and the
batch's trajectory locks (taken together, released together, never another sink's)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from common import keys
from common.events import EpisodeEvent, StepEvent, encode_event
from common.objectstore import LocalDirStore
from common.status import RolloutStatus
from services.storage_sink.locks import BatchLocks
from tests.storage_sink.test_consumer import consumer, drain, png


@pytest.fixture()
def client(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as conn:
        yield conn


def ref(task: str, attempt: int = 1) -> dict[str, Any]:
    return {"run_id": "run-1", "task_id": task, "rollout_index": 0, "rollout_id": f"run-1:{task}:0",
            "attempt": attempt}


def episode(task: str, steps: int, attempt: int = 1) -> list[dict[bytes, bytes]]:
    """Stream entries of one episode: start, `steps` steps with PNGs, end."""
    entries = [encode_event(EpisodeEvent(phase="start", task_config={"id": task}, **ref(task, attempt)))]
    entries += [encode_event(StepEvent(step=n, response=f"{task}-{attempt}-{n}", **ref(task, attempt)), png(n))
                for n in range(steps)]
    entries.append(encode_event(EpisodeEvent(phase="end", status=RolloutStatus.COMPLETED, reward=1.0,
                                             num_steps=steps, **ref(task, attempt))))
    return entries  # type: ignore[return-value]


def interleave(*episodes: list[dict[bytes, bytes]]) -> list[dict[bytes, bytes]]:
    """Round-robin over the episodes, as from concurrent runners."""
    out = []
    for n in range(max(len(e) for e in episodes)):
        out += [e[n] for e in episodes if n < len(e)]
    return out


def publish(client: redis.Redis, entries: list[dict[bytes, bytes]]) -> None:
    for entry in entries:
        client.xadd(keys.EVENTS_STREAM, entry)  # type: ignore[arg-type]


def assert_complete(store: LocalDirStore, task: str, steps: int, attempt: int = 1) -> None:
    prefix = f"run-1/{task}_0"
    manifest = json.loads(store.get(f"{prefix}/manifest.json"))
    assert manifest["attempt"] == attempt and manifest["steps"] == [f"step_{n:04d}.json" for n in range(steps)]
    assert store.list(f"{prefix}/step_") == [f"{prefix}/step_{n:04d}.json" for n in range(steps)]
    assert store.list(f"{prefix}/image_") == [f"{prefix}/image_{n:04d}.png" for n in range(steps)]
    for n in range(steps):
        assert json.loads(store.get(f"{prefix}/step_{n:04d}.json"))["response"] == f"{task}-{attempt}-{n}"
        assert store.get(f"{prefix}/image_{n:04d}.png") == png(n)


def test_a_batch_of_interleaved_trajectories_is_written_whole(redis_url: str, client: redis.Redis,
                                                              tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path)
    publish(client, interleave(episode("a", 6), episode("b", 4), episode("c", 9)))  # 25 entries
    sink = consumer(redis_url, store, batch=10)
    assert sink.process_once() == 10  # one round writes a whole batch of several trajectories
    assert drain(sink) == 15
    for task, steps in (("a", 6), ("b", 4), ("c", 9)):
        assert_complete(store, task, steps)
    assert client.xlen(keys.EVENTS_STREAM) == 0
    assert client.xpending(keys.EVENTS_STREAM, keys.SINK_GROUP)["pending"] == 0


class RecordingStore(LocalDirStore):
    """A real local store that records the order in which puts finish and makes the first two PNG puts
    wait for each other (a barrier: they must be in flight at the same time, or the puts fail)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.finished: list[str] = []
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(2, timeout=10)
        self.pngs = 0

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        with self.lock:
            first_two = key.endswith(".png") and self.pngs < 2
            self.pngs += key.endswith(".png")
        if first_two:
            self.barrier.wait()
        super().put(key, data, content_type)
        with self.lock:
            self.finished.append(key)


def test_parallel_puts_keep_each_trajectorys_order(redis_url: str, client: redis.Redis, tmp_path: Path) -> None:
    store = RecordingStore(tmp_path)
    publish(client, interleave(episode("a", 5), episode("b", 3)))
    drain(consumer(redis_url, store, batch=64, workers=4))
    assert not store.barrier.broken  # two PNG puts were in flight at once
    for task, steps in (("a", 5), ("b", 3)):
        assert_complete(store, task, steps)
        prefix = f"run-1/{task}_0/"
        order = [key.removeprefix(prefix) for key in store.finished if key.startswith(prefix)]
        started = order.index("attempt.json")
        assert all(order.index(f"{kind}_{n:04d}.{ext}") > started
                   for n in range(steps) for kind, ext in (("step", "json"), ("image", "png")))
        assert order[-1] == "manifest.json"  # after every step, final_messages.json and reward.txt


class FailOnce(LocalDirStore):
    """A real local store (healthy) whose put of one key fails once."""

    def __init__(self, root: Path, key: str) -> None:
        super().__init__(root)
        self.key = key

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        if key == self.key:
            self.key = ""
            raise OSError("transient write error")
        super().put(key, data, content_type)


def test_a_failed_put_holds_back_only_the_rest_of_its_trajectory(redis_url: str, client: redis.Redis,
                                                                 tmp_path: Path) -> None:
    store = FailOnce(tmp_path, "run-1/a_0/image_0001.png")
    publish(client, interleave(episode("a", 3), episode("b", 3)))  # 10 entries, one batch
    sink = consumer(redis_url, store)
    assert sink.process_once() == 8  # a's step 1 failed: it and a's end stay pending
    assert not os.path.exists(tmp_path / "run-1/a_0/manifest.json")
    assert_complete(store, "b", 3)
    assert client.xpending(keys.EVENTS_STREAM, keys.SINK_GROUP)["pending"] == 2
    assert sink.process_once() == 2  # the retry: its own pending entries, in order
    assert_complete(store, "a", 3)
    assert client.xlen(keys.EVENTS_STREAM) == 0


def test_the_batch_read_ahead_after_a_failure_comes_back_in_order(redis_url: str, client: redis.Redis,
                                                                  tmp_path: Path) -> None:
    store = FailOnce(tmp_path, "run-1/a_0/step_0001.json")
    publish(client, episode("a", 6))  # 8 entries; batches of 3: the next 3 are read while 3 are written
    sink = consumer(redis_url, store, batch=3)
    assert sink.process_once() == 2  # start and step 0; step 1 failed
    assert drain(sink) == 6
    assert_complete(store, "a", 6)
    assert client.xpending(keys.EVENTS_STREAM, keys.SINK_GROUP)["pending"] == 0


class ListingSpy(LocalDirStore):
    """A real local store that records every listing prefix."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.prefixes: list[str] = []

    def list(self, prefix: str) -> list[str]:
        self.prefixes.append(prefix)
        return super().list(prefix)


def test_episode_start_and_end_read_nothing_outside_the_trajectory(redis_url: str, client: redis.Redis,
                                                                   tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = ListingSpy(tmp_path)
    for n in range(300):  # other trajectories, in the same run and in another one
        store.put(f"run-1/other{n}_0/step_0000.json", b"{}")
        store.put(f"run-2/a_{n}/step_0000.json", b"{}")
    read: list[str] = []
    scandir = os.scandir

    def scandir_spy(path: str) -> Any:
        read.append(os.path.relpath(path, tmp_path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", scandir_spy)
    sink = consumer(redis_url, store)
    publish(client, episode("a", 3))
    drain(sink)
    assert store.prefixes == [] and read == []  # a first attempt lists nothing at all
    assert_complete(store, "a", 3)
    store.prefixes.clear()
    read.clear()
    client.set(keys.attempt_counter("run-1:a:0"), 2)  # the runners counted the retry
    publish(client, episode("a", 2, attempt=2))  # a retried attempt lists its own step files only
    drain(sink)
    assert store.prefixes == ["run-1/a_0/step_"] and read == ["run-1/a_0"]
    assert_complete(store, "a", 2, attempt=2)


def test_a_stopping_sink_writes_the_batch_it_read_ahead(redis_url: str, client: redis.Redis,
                                                         tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path)
    publish(client, episode("a", 2))  # 4 entries
    sink = consumer(redis_url, store, batch=2)
    assert sink.process_once() == 2  # start and step 0 written; step 1 and the end read ahead
    assert client.xpending(keys.EVENTS_STREAM, keys.SINK_GROUP)["pending"] == 2
    stop = threading.Event()
    stop.set()
    sink.run_forever(stop)  # stops at once, after writing what it had read
    assert_complete(store, "a", 2)
    assert client.xlen(keys.EVENTS_STREAM) == 0


def test_a_batch_takes_its_trajectory_locks_together_and_leaves_none(redis_url: str, client: redis.Redis,
                                                                     tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path)
    other = client.lock(keys.sink_lock("run-1/b_0"), timeout=30)  # another sink writes b
    assert other.acquire()
    publish(client, interleave(episode("a", 2), episode("b", 2), episode("c", 2)))  # 12 entries, one batch
    sink = consumer(redis_url, store, lock_timeout_s=0.2)  # type: ignore[arg-type]
    assert sink.process_once() == 8  # a and c written; b waited for its lock, then was left pending
    assert_complete(store, "a", 2)
    assert_complete(store, "c", 2)
    assert not store.list("run-1/b_0/")
    assert client.keys(keys.sink_lock("*")) == [keys.sink_lock("run-1/b_0").encode()]  # a's and c's released
    other.release()
    assert drain(sink) == 4
    assert_complete(store, "b", 2)
    assert client.keys(keys.sink_lock("*")) == []


def test_locks_of_a_batch_are_not_released_when_another_sink_took_them_over(redis_url: str, client: redis.Redis,
                                                                           tmp_path: Path) -> None:
    locks = BatchLocks(client, ["run-1/a_0", "run-1/b_0"], timeout_s=30)
    assert locks.held == {"run-1/a_0", "run-1/b_0"}
    assert BatchLocks(client, ["run-1/a_0"], timeout_s=30).held == set()  # taken: not ours
    client.set(keys.sink_lock("run-1/b_0"), b"another sink's token")  # as after an expiry and a take-over
    locks.release()
    assert client.keys(keys.sink_lock("*")) == [keys.sink_lock("run-1/b_0").encode()]
    assert client.get(keys.sink_lock("run-1/b_0")) == b"another sink's token"
