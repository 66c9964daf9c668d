"""Redis memory, measured on a real redis-server (issue 15, point 3): bytes per queued rollout of a
1,000-rollout run (pipelined enqueue), bytes per in-flight step on the event stream, and the byte-based
backpressure that bounds the stream. docs/guarantees.md quotes the printed figures."""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from PIL import Image

from common import keys
from common.events import StepEvent
from common.run import RunRequest
from services.runner.publisher import BackpressureTimeout, EventPublisher, stream_bytes
from services.task_producer.queueing import enqueue_run
from services.task_producer.settings import ProducerSettings

REF: dict[str, Any] = {"run_id": "r", "task_id": "t", "rollout_index": 0, "rollout_id": "r:t:0", "attempt": 1}


@pytest.fixture()
def client(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as conn:
        yield conn


def _used(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])  # type: ignore[index]


def _screenshot(width: int = 1280, height: int = 720) -> bytes:
    """A desktop-like PNG: flat background with a few hundred small noisy widgets."""
    rng = random.Random(0)
    image = Image.new("RGB", (width, height), (40, 44, 52))
    for _ in range(300):
        x, y = rng.randrange(width - 40), rng.randrange(height - 12)
        image.paste(tuple(rng.randrange(256) for _ in range(3)), (x, y, x + rng.randrange(5, 40), y + 12))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def test_bytes_per_queued_rollout_of_a_1000_rollout_run(client: redis.Redis, redis_url: str) -> None:
    tasks = [{"id": f"task-{i}", "instruction": "In a terminal, write the word fast into ~/Desktop/fast.txt.",
              "evaluator": {"func": "check_include_exclude", "result": {"type": "vm_command_line",
                                                                        "command": "cat ~/Desktop/fast.txt"},
                            "expected": {"type": "rule", "rules": {"include": ["fast"]}}}} for i in range(10)]
    request = RunRequest.model_validate({"tasks": tasks, "rollouts_per_task": 100})
    before = _used(client)
    result = enqueue_run(client, request, ProducerSettings(redis_url=redis_url))
    per_rollout = (_used(client) - before) / 1000
    print(f"\nbytes per queued rollout: {per_rollout:.0f}")
    assert result.enqueued == 1000
    assert per_rollout < 4096  # the README states the measured figure


def test_the_backlog_is_measured_once_per_share_of_the_room_not_per_step(client: redis.Redis) -> None:
    png = _screenshot()
    event = StepEvent(step=0, response="Thought: wait\nAction: wait()", **REF)

    def measures() -> int:
        return int(client.info("commandstats").get("cmdstat_memory|usage", {}).get("calls", 0))

    roomy = EventPublisher(client, backlog_bytes=1000 * len(png), wait_s=0.3)
    before = measures()
    for _ in range(40):
        roomy.publish(event, png)
    assert measures() - before == 1  # 40 entries use far less than half the room: one measure
    tight = EventPublisher(client, backlog_bytes=stream_bytes(client) + 4 * len(png), wait_s=0.3)
    before = measures()
    for _ in range(4):
        tight.publish(event, png)
    assert measures() - before >= 2  # the room halves with each measure: measured again before it is gone


def test_bytes_per_in_flight_step_and_byte_backpressure(client: redis.Redis) -> None:
    png = _screenshot()
    publisher = EventPublisher(client, backlog_bytes=20 * len(png), wait_s=0.3)
    event = StepEvent(step=0, response="Thought: click the button\nAction: click(start_box='(100,200)')", **REF)
    for _ in range(10):
        publisher.publish(event, png)
    per_step = stream_bytes(client) / 10
    print(f"\nin-flight step: {per_step:.0f} bytes for a {len(png)}-byte PNG ({per_step - len(png):.0f} bytes "
          "besides the PNG)")
    assert len(png) < per_step < len(png) + 4096
    while stream_bytes(client) <= publisher.backlog_bytes:  # fill the stream up to its byte limit
        publisher.publish(event, png)
    entries = client.xlen(keys.EVENTS_STREAM)
    with pytest.raises(BackpressureTimeout, match="bytes"):  # no sink drains it: the next publish gives up
        publisher.publish(event, png)
    assert client.xlen(keys.EVENTS_STREAM) == entries <= 21
