"""Adaptive rollouts: the producer's controller adds rollouts to a task only while its results are
informative. Producer over real HTTP with its controller thread, a real redis-server and RQ queue;
the "runner" here records each dequeued rollout's result with `record_rollout` (what the runner
does), so outcomes are chosen per task."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import redis
from rq import Queue

from common import keys
from common.polling import wait_until
from common.run import AdaptiveRollouts
from common.runstate import RolloutRecord, record_rollout
from common.status import RolloutStatus
from services.task_producer.adaptive import informative, register_curriculum
from services.task_producer.api import create_app
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app

POLICY = AdaptiveRollouts(min_rollouts=2, max_rollouts=6, batch=2)


def _ended(*rewards: float | None) -> list[RolloutRecord]:
    return [RolloutRecord(rollout_id=f"r:t:{i}", run_id="r", task_id="t", rollout_index=i,
                          status=RolloutStatus.COMPLETED if r is not None else RolloutStatus.ENV_ERROR, reward=r)
            for i, r in enumerate(rewards)]


def test_informative_curriculum_adds_only_while_results_are_mixed() -> None:
    assert informative("t", _ended(1.0, 1.0), POLICY) == 0  # all success: settled
    assert informative("t", _ended(0.0, 0.0), POLICY) == 0  # all failure: settled
    assert informative("t", _ended(1.0, 0.0), POLICY) == 2  # mixed: one more batch
    assert informative("t", _ended(1.0, 0.0, 1.0, 1.0, 0.0), POLICY) == 1  # up to the cap
    assert informative("t", _ended(1.0, 0.0, 1.0, 1.0, 0.0, 1.0), POLICY) == 0
    assert informative("t", _ended(1.0, None), POLICY) == 1  # an infra failure told nothing


@pytest.fixture
def producer(redis_url: str, tmp_path: Any) -> Iterator[httpx.Client]:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store")
    with serve_app(create_app(settings)) as url, httpx.Client(base_url=url, timeout=10) as client:
        yield client


def _task(task_id: str) -> dict[str, Any]:
    return {"id": task_id, "instruction": f"do {task_id}", "evaluator": {"func": "infeasible"}, "snapshot": "os"}


def _play(producer: httpx.Client, redis_url: str, run_id: str, reward_of: Callable[[str, int], float],
          timeout_s: float = 60) -> dict[str, int]:
    """Dequeue the run's rollouts as a runner would and record their rewards until the run finishes;
    returns task id -> rollouts it got."""
    client = redis.Redis.from_url(redis_url)
    queue = Queue(keys.QUEUE_NAMES["default"], connection=client)
    played: dict[str, int] = {}

    def drain() -> bool:
        for job_id in queue.job_ids:
            run, task_id, index = job_id.split("__")
            queue.remove(job_id)
            record_rollout(client, RolloutRecord(
                rollout_id=f"{run}:{task_id}:{index}", run_id=run, task_id=task_id, rollout_index=int(index),
                status=RolloutStatus.COMPLETED, reward=reward_of(task_id, int(index))))
            played[task_id] = played.get(task_id, 0) + 1
        return bool(producer.get(f"/v1/runs/{run_id}").json()["finished"])

    wait_until(drain, timeout_s, f"adaptive run {run_id} to finish", interval_s=0.1)
    return played


def test_run_extends_mixed_tasks_to_the_cap_and_stops_uniform_ones(producer: httpx.Client, redis_url: str) -> None:
    response = producer.post("/v1/runs", json={
        "tasks": [_task("easy"), _task("hard"), _task("coin")], "run_id": "adaptive-1",
        "adaptive": {"min_rollouts": 2, "max_rollouts": 6, "batch": 2}})
    assert response.status_code == 201, response.text
    assert response.json()["enqueued"] == 6  # min_rollouts per task to start with
    outcomes = {"easy": lambda i: 1.0, "hard": lambda i: 0.0, "coin": lambda i: float(i % 2)}
    played = _play(producer, redis_url, "adaptive-1", lambda task, i: outcomes[task](i))
    assert played == {"easy": 2, "hard": 2, "coin": 6}
    run = producer.get("/v1/runs/adaptive-1").json()
    assert (run["total"], run["done"], run["finished"]) == (10, 10, True)
    client = redis.Redis.from_url(redis_url)
    adaptive_keys = (keys.adaptive_request("adaptive-1"), keys.adaptive_cursor("adaptive-1"),
                     keys.run_task_rollouts("adaptive-1"), keys.run_settled("adaptive-1"))
    # Retired once settled: no key of the run is kept forever.
    wait_until(lambda: all(client.ttl(key) > 0 for key in adaptive_keys), 10, "adaptive keys to get a TTL")
    assert not client.sismember(keys.ADAPTIVE_RUNS, "adaptive-1")


def test_a_registered_curriculum_decides_and_an_unknown_one_is_rejected(producer: httpx.Client, redis_url: str) -> None:
    register_curriculum("always-three", lambda task_id, ended, policy: 3 - len(ended))
    response = producer.post("/v1/runs", json={
        "tasks": [_task("a")], "run_id": "adaptive-2",
        "adaptive": {"min_rollouts": 1, "max_rollouts": 5, "curriculum": "always-three"}})
    assert response.status_code == 201, response.text
    assert _play(producer, redis_url, "adaptive-2", lambda task, i: 1.0) == {"a": 3}
    bad = producer.post("/v1/runs", json={"tasks": [_task("a")], "adaptive": {"curriculum": "nope"}})
    assert bad.status_code == 422 and "unknown curriculum 'nope'" in bad.json()["error"]
    inverted = producer.post("/v1/runs", json={"tasks": [_task("a")], "adaptive": {"min_rollouts": 4,
                                                                                  "max_rollouts": 2}})
    assert inverted.status_code == 422 and "must not exceed max_rollouts" in inverted.json()["error"]
