"""Sink and object stores under faults, against a real redis-server, moto's S3 server and local dirs
(issue 15): an end event handled before its last steps, a trajectory locked by another sink, NOGROUP
after the stream vanished, dead letters capped with their PNGs stored aside, a store outage that
dead-letters nothing, an S3 endpoint that never answers, and local listings that stay in their prefix."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from common import keys
from common.events import EpisodeEvent, StepEvent, encode_event
from common.objectstore import LocalDirStore, S3Store
from common.polling import wait_until
from common.status import RolloutStatus
from services.storage_sink.dead_letters import DEAD_LETTER_PREFIX
from tests.test_storage_sink import PREFIX, REF, consumer, drain, png


@pytest.fixture()
def client(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as conn:
        yield conn


def _xadd(client: redis.Redis, event: StepEvent | EpisodeEvent, image: bytes | None = None) -> None:
    client.xadd(keys.EVENTS_STREAM, encode_event(event, image))  # type: ignore[arg-type]


def test_end_event_before_its_last_steps_still_names_them(redis_url: str, client: redis.Redis,
                                                          tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path)
    sink = consumer(redis_url, store)
    _xadd(client, EpisodeEvent(phase="start", **REF))
    _xadd(client, StepEvent(step=0, **REF), png(0))
    _xadd(client, EpisodeEvent(phase="end", status=RolloutStatus.COMPLETED, reward=1.0, num_steps=2, **REF))
    _xadd(client, StepEvent(step=1, **REF), png(1))  # another sink was slower with this one
    drain(sink)
    manifest = json.loads(store.get(f"{PREFIX}/manifest.json"))
    assert manifest["steps"] == ["step_0000.json", "step_0001.json"]
    assert store.list(f"{PREFIX}/step_") == [f"{PREFIX}/{name}" for name in manifest["steps"]]


def test_a_trajectory_locked_by_another_sink_is_left_pending(redis_url: str, client: redis.Redis,
                                                             tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path)
    sink = consumer(redis_url, store, lock_timeout_s=0.2)  # type: ignore[arg-type]
    other = client.lock(keys.sink_lock(PREFIX), timeout=30)
    assert other.acquire()
    _xadd(client, EpisodeEvent(phase="start", task_config={"id": "task-a"}, **REF))
    assert sink.process_once() == 0 and not store.list(PREFIX)
    other.release()
    assert sink.process_once() == 1 and store.list(f"{PREFIX}/task_config.json")


def test_nogroup_does_not_end_the_sink_loop(redis_url: str, client: redis.Redis, tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path)
    sink = consumer(redis_url, store, block_ms=100)
    stop = threading.Event()
    thread = threading.Thread(target=sink.run_forever, args=(stop,), daemon=True)
    thread.start()
    try:
        client.delete(keys.EVENTS_STREAM)  # stream and group gone (a Redis restart without its data)
        _xadd(client, EpisodeEvent(phase="start", task_config={"id": "task-a"}, **REF))
        wait_until(lambda: store.list(f"{PREFIX}/task_config.json"), 20, "the sink to re-create its group")
        assert thread.is_alive()
    finally:
        stop.set()
        thread.join(timeout=10)


def test_dead_letters_are_capped_and_their_pngs_stored_aside(redis_url: str, client: redis.Redis,
                                                             tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path)
    sink = consumer(redis_url, store, dead_letter_max=100)
    image = png(3)
    for _ in range(300):
        client.xadd(keys.EVENTS_STREAM, {b"type": b"alien", b"data": b"{}", b"png": image})
    drain(sink)
    dead = client.xrange(keys.DEAD_LETTER_STREAM)
    assert 100 <= len(dead) <= 200  # approximate MAXLEN trims whole nodes
    last = dead[-1][1]
    assert b"png" not in last and store.get(last[b"png_key"].decode()) == image
    assert last[b"png_key"].decode().startswith(f"{DEAD_LETTER_PREFIX}/")


class DownStore(LocalDirStore):
    """A local store whose writes fail and which reports itself unhealthy while `down` is set (an outage)."""

    down = True

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        if self.down:
            raise OSError("store unreachable")
        super().put(key, data, content_type)

    def healthy(self) -> bool:
        return not self.down


def test_a_store_outage_dead_letters_nothing(redis_url: str, client: redis.Redis, tmp_path: Path) -> None:
    store = DownStore(tmp_path)
    sink = consumer(redis_url, store, claim_idle_ms=0, max_deliveries=2)
    _xadd(client, EpisodeEvent(phase="start", task_config={"id": "task-a"}, **REF))
    _xadd(client, StepEvent(step=0, **REF), png(0))
    for _ in range(10):
        assert sink.process_once() == 0
    assert client.xlen(keys.DEAD_LETTER_STREAM) == 0
    store.down = False
    assert drain(sink) == 2 and len(store.list(PREFIX)) == 4


def test_s3_calls_time_out_when_the_endpoint_never_answers() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts connections, never answers
    try:
        started = time.monotonic()
        with pytest.raises(Exception):  # noqa: B017 - urllib3's timeout error, wrapped by the SDK
            S3Store("b", f"127.0.0.1:{listener.getsockname()[1]}", "k", "s", read_timeout_s=0.5, retries=0)
        assert time.monotonic() - started < 10
    finally:
        listener.close()


def test_local_listing_reads_only_what_the_prefix_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalDirStore(tmp_path)
    for run in range(3):
        store.put(f"run-{run}/task_0/step_0000.json", b"{}")
        store.put(f"run-{run}/task_0/evidence/a.txt", b"x")
        store.put(f"run-{run}/task_01/step_0000.json", b"{}")
    read: list[str] = []  # every directory read (os.walk reads through os.scandir too)
    scandir = os.scandir

    def scandir_spy(path: str) -> Any:
        read.append(os.path.relpath(path, tmp_path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", scandir_spy)
    assert store.list("run-1/task_0/step_") == ["run-1/task_0/step_0000.json"]
    assert read == ["run-1/task_0"]  # not the evidence/ tree, not the other runs
    read.clear()
    assert store.list("run-1/task_0") == ["run-1/task_0/evidence/a.txt", "run-1/task_0/step_0000.json",
                                          "run-1/task_01/step_0000.json"]
    assert sorted(read) == ["run-1", "run-1/task_0", "run-1/task_0/evidence", "run-1/task_01"]
