"""The event stream sharded by run (issue 27, point 4), end to end on a real redis-server: the runner's
publisher puts each run's events on its shard's stream, two real sink processes (`python -m
services.storage_sink`) consume the shards assigned to them, and every trajectory is written whole, in
order."""

from __future__ import annotations

import json
import os
from pathlib import Path

import redis

from common import keys
from common.events import EpisodeEvent, StepEvent
from common.eventshards import shard_of, stream_of
from common.objectstore import LocalDirStore
from common.polling import wait_until
from common.status import RolloutStatus
from services.cli.processes import ManagedProcess, stop_all
from services.runner.publisher import EventPublisher

SHARDS = 4
STEPS = 3


def publish_rollout(publisher: EventPublisher, run_id: str, index: int) -> None:
    ref = {"run_id": run_id, "task_id": "task-a", "rollout_index": index, "rollout_id": f"{run_id}:task-a:{index}",
           "attempt": 1}
    publisher.publish(EpisodeEvent(phase="start", task_config={"id": "task-a"}, **ref))
    for step in range(STEPS):
        publisher.publish(StepEvent(step=step, response=f"{run_id} step {step}", **ref), b"\x89PNG fake")
    publisher.publish(EpisodeEvent(phase="end", status=RolloutStatus.COMPLETED, reward=1.0, num_steps=STEPS, **ref))


def test_each_run_goes_to_one_shard_and_sinks_persist_the_shards_they_are_assigned(
        redis_url: str, tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_url)
    publisher = EventPublisher(client, backlog_bytes=1 << 30, wait_s=5, shards=SHARDS)
    runs = [f"run-{i}" for i in range(8)]
    for run_id in runs:
        for index in range(2):
            publish_rollout(publisher, run_id, index)
    assert len({shard_of(run_id, SHARDS) for run_id in runs}) >= 3
    for shard in range(SHARDS):
        stream = keys.events_stream(shard)
        for _, fields in client.xrange(stream):
            assert stream_of(json.loads(fields[b"data"])["run_id"], SHARDS) == stream
    assert sum(client.xlen(keys.events_stream(s)) for s in range(SHARDS)) == len(runs) * 2 * (STEPS + 2)

    store_dir = tmp_path / "store"
    env = {"REDIS_URL": redis_url, "STORE_URL": f"file://{store_dir}", "EVENT_SHARDS": str(SHARDS),
           "SINK_METRICS_PORT": "0", "PYTHONPATH": os.getcwd()}
    sinks = [ManagedProcess(name=f"sink-{name}", module="services.storage_sink", log_path=tmp_path / f"{name}.log",
                            env={**env, "SINK_SHARDS": assigned, "SINK_CONSUMER": name})
             for name, assigned in (("a", "0-1"), ("b", "2,3"))]
    try:
        for sink in sinks:
            sink.start()
        drained = lambda: all(client.xlen(keys.events_stream(s)) == 0 for s in range(SHARDS))  # noqa: E731
        wait_until(drained, 60, "both sinks to drain their shards", interval_s=0.2)
        for shard in range(SHARDS):
            consumers = {c["name"].decode() for c in client.xinfo_consumers(keys.events_stream(shard), keys.SINK_GROUP)}
            assert consumers == {"a" if shard < 2 else "b"}
    finally:
        stop_all(sinks)
    store = LocalDirStore(store_dir)
    for run_id in runs:
        for index in range(2):
            prefix = f"{run_id}/task-a_{index}"
            manifest = json.loads(store.get(f"{prefix}/manifest.json"))
            assert manifest["steps"] == [f"step_{i:04d}.json" for i in range(STEPS)]
            for step in range(STEPS):
                assert json.loads(store.get(f"{prefix}/step_{step:04d}.json"))["response"] == f"{run_id} step {step}"
