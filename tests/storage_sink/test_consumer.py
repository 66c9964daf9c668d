"""Sink and object stores against a real redis-server, moto's S3 server (MinIO stand-in) and local dirs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import redis
from PIL import Image

from common import attempts, keys
from common.events import EpisodeEvent, StepEvent, encode_event
from common.objectstore import LocalDirStore, ObjectStore, S3Store
from common.polling import free_port
from common.status import RolloutStatus
from services.storage_sink.consumer import SinkConsumer
from services.storage_sink.settings import SinkSettings
from services.storage_sink.writer import TrajectoryWriter

PREFIX = "run-1/task-a_0"




@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalDirStore(tmp_path / "store")
    endpoint = request.getfixturevalue("s3_endpoint")
    return S3Store(f"b-{free_port()}", endpoint, "testing", "testing")


def png(color: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 36), (color, 0, 0)).save(buffer, "PNG")
    return buffer.getvalue()


REF = {"run_id": "run-1", "task_id": "task-a", "rollout_index": 0, "rollout_id": "run-1:task-a:0"}


def episode_entries(attempt: int = 1, steps: int = 3, end: bool = True) -> list[dict[bytes, bytes]]:
    ref = {**REF, "attempt": attempt}
    entries = [encode_event(EpisodeEvent(phase="start", task_config={"id": "task-a"}, **ref))]
    for step in range(steps):
        entries.append(encode_event(StepEvent(step=step, response=f"a{attempt}s{step}", **ref), png(step)))
    if end:
        entries.append(encode_event(EpisodeEvent(
            phase="end", status=RolloutStatus.COMPLETED, reward=1.0, num_steps=steps,
            final_messages=[{"role": "user",
                             "content": [{"type": "image_url", "image_url": {"url": "image_0000.png"}}]}],
            **ref)))
    return entries


def publish_episode(client: redis.Redis, attempt: int = 1, steps: int = 3, end: bool = True) -> None:
    for entry in episode_entries(attempt, steps, end):
        client.xadd(keys.EVENTS_STREAM, entry)  # type: ignore[arg-type]


def consumer(redis_url: str, store: ObjectStore, name: str = "c1", **extra: int) -> SinkConsumer:
    settings = SinkSettings(redis_url=redis_url, consumer=name, **extra)
    sink = SinkConsumer(redis.Redis.from_url(redis_url), TrajectoryWriter(store), settings)
    sink.ensure_group()
    return sink


def drain(sink: SinkConsumer) -> int:
    total = 0
    while (n := sink.process_once()) > 0:
        total += n
    return total


def test_object_store_basics(store: ObjectStore) -> None:
    store.put("a/b.txt", b"1")
    store.put("a/b.txt", b"2")
    store.put("a/c.txt", b"3")
    assert store.get("a/b.txt") == b"2" and store.list("a/") == ["a/b.txt", "a/c.txt"]
    store.delete("a/b.txt")
    store.delete("a/missing")
    with pytest.raises(KeyError):
        store.get("a/b.txt")
    for bad in ("../x", "/abs", "a//b", ""):
        with pytest.raises(ValueError, match="invalid object key"):
            store.put(bad, b"x")


def test_full_trajectory_layout(redis_url: str, store: ObjectStore) -> None:
    client = redis.Redis.from_url(redis_url)
    publish_episode(client)
    assert drain(consumer(redis_url, store)) == 5
    names = {k.rsplit("/", 1)[1] for k in store.list(PREFIX + "/")}
    assert names == {"attempt.json", "task_config.json", "image_0000.png", "image_0001.png", "image_0002.png",
                     "step_0000.json", "step_0001.json", "step_0002.json", "final_messages.json", "reward.txt",
                     "manifest.json"}
    assert store.get(f"{PREFIX}/image_0001.png") == png(1)
    assert json.loads(store.get(f"{PREFIX}/step_0002.json"))["response"] == "a1s2"
    manifest = json.loads(store.get(f"{PREFIX}/manifest.json"))
    assert (manifest["status"], manifest["reward"], manifest["attempt"]) == ("completed", 1.0, 1)
    assert manifest["steps"] == ["step_0000.json", "step_0001.json", "step_0002.json"]
    assert store.get(f"{PREFIX}/reward.txt") == b"1.0"
    assert client.xlen(keys.EVENTS_STREAM) == 0  # persisted entries leave the stream (backpressure signal)
    assert client.xpending(keys.EVENTS_STREAM, keys.SINK_GROUP)["pending"] == 0


def test_redelivery_is_idempotent(redis_url: str, tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path)
    client = redis.Redis.from_url(redis_url)
    entries = episode_entries()
    for entry in entries:
        client.xadd(keys.EVENTS_STREAM, entry)  # type: ignore[arg-type]
    drain(consumer(redis_url, store))
    first = {k: store.get(k) for k in store.list("")}
    for entry in entries:  # the same events delivered again
        client.xadd(keys.EVENTS_STREAM, entry)  # type: ignore[arg-type]
    assert drain(consumer(redis_url, store)) == len(entries)
    assert {k: store.get(k) for k in store.list("")} == first


class FlakyStore(LocalDirStore):
    """Test double: a local store whose first `failures` puts raise, like an S3 outage."""

    def __init__(self, root: Path, failures: int) -> None:
        super().__init__(root)
        self.failures = failures

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        if self.failures > 0:
            self.failures -= 1
            raise OSError("store unavailable")
        super().put(key, data, content_type)


def test_ack_only_after_write_and_retry_via_claim(redis_url: str, tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_url)
    publish_episode(client, steps=1, end=False)
    store = FlakyStore(tmp_path, failures=1)
    sink = consumer(redis_url, store, claim_idle_ms=0)
    assert sink.process_once() == 0  # start failed: it and the step after it stay pending, in order
    assert client.xpending(keys.EVENTS_STREAM, keys.SINK_GROUP)["pending"] == 2
    assert sink.process_once() == 2  # its own pending entries re-read and written now
    assert client.xpending(keys.EVENTS_STREAM, keys.SINK_GROUP)["pending"] == 0
    assert store.list(f"{PREFIX}/task_config.json")


def test_dead_consumer_entries_are_claimed(redis_url: str, tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_url)
    publish_episode(client)
    client.xgroup_create(keys.EVENTS_STREAM, keys.SINK_GROUP, id="0", mkstream=True)
    client.xreadgroup(keys.SINK_GROUP, "dead-sink", {keys.EVENTS_STREAM: ">"}, count=100)  # read, never acked
    store = LocalDirStore(tmp_path)
    survivor = consumer(redis_url, store, name="survivor", claim_idle_ms=0)
    assert drain(survivor) == 5
    assert json.loads(store.get(f"{PREFIX}/manifest.json"))["status"] == "completed"


def test_poison_and_repeatedly_failing_entries_are_dead_lettered(redis_url: str, tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_url)
    client.xadd(keys.EVENTS_STREAM, {b"type": b"step", b"data": b"{broken"})
    client.xadd(keys.EVENTS_STREAM, {b"type": b"alien", b"data": b"{}"})
    sink = consumer(redis_url, LocalDirStore(tmp_path))
    assert sink.process_once() == 2
    dead = client.xrange(keys.DEAD_LETTER_STREAM)
    assert len(dead) == 2 and b"undecodable" in dead[0][1][b"error"] and dead[1][1][b"type"] == b"alien"
    publish_episode(client, steps=0, end=False)
    always_failing = consumer(redis_url, FlakyStore(tmp_path / "f", failures=10**6), claim_idle_ms=0,
                              max_deliveries=3)
    for _ in range(5):
        always_failing.process_once()
    assert len(client.xrange(keys.DEAD_LETTER_STREAM)) == 3
    assert client.xpending(keys.EVENTS_STREAM, keys.SINK_GROUP)["pending"] == 0


def test_attempts_never_mix(redis_url: str, tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_url)
    store = LocalDirStore(tmp_path)
    sink = consumer(redis_url, store)
    publish_episode(client, attempt=1, steps=3, end=False)  # the first attempt died after 3 steps
    drain(sink)
    attempts.start(client, REF["rollout_id"])
    attempts.start(client, REF["rollout_id"])  # the runners counted the retry (the sink believes its start)
    publish_episode(client, attempt=2, steps=1, end=False)
    late = StepEvent(step=2, response="late", **REF, attempt=1)  # a straggler of attempt 1
    client.xadd(keys.EVENTS_STREAM, encode_event(late, png(9)))
    client.xadd(keys.EVENTS_STREAM, encode_event(EpisodeEvent(phase="end", status=RolloutStatus.COMPLETED,
                                                              reward=0.0, num_steps=1, **REF, attempt=2)))
    drain(sink)
    steps = store.list(f"{PREFIX}/step_")
    assert steps == [f"{PREFIX}/step_0000.json"]
    assert json.loads(store.get(steps[0]))["attempt"] == 2
    assert store.list(f"{PREFIX}/image_") == [f"{PREFIX}/image_0000.png"]
    manifest = json.loads(store.get(f"{PREFIX}/manifest.json"))
    assert manifest["attempt"] == 2 and manifest["steps"] == ["step_0000.json"]
