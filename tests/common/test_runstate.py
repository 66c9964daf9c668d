"""Run state, producer limits and idempotency against a real redis-server (issue 15, point 1 and 3):

- a late record of an older attempt never overwrites a newer one;
- every per-run key gets a TTL once the run's last rollout ends (and not before);
- an idempotency key has a TTL, and a retry after a producer crash mid-enqueue enqueues the missing
  rollouts;
- `GET /v1/runs?limit=<huge>` is a 422, and runs above the rollout or instruction caps are 422s naming them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from rq import Queue
from rq.job import Job

from common import keys
from common.run import RunRequest, rq_job_id
from common.runstate import (
    RolloutRecord,
    RunMeta,
    load_rollout,
    record_rollout,
    run_is_finished,
    save_run_meta,
    summarize_run,
)
from common.status import RolloutStatus
from services.task_producer.api import create_app
from services.task_producer.queueing import enqueue_run
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app


def _task(task_id: str, instruction: str | None = None) -> dict[str, Any]:
    return {"id": task_id, "instruction": instruction or f"do {task_id}", "evaluator": {"func": "infeasible"},
            "snapshot": "os"}


def _record(status: RolloutStatus, attempt: int, rollout: int = 0) -> RolloutRecord:
    return RolloutRecord(rollout_id=f"r1:t:{rollout}", run_id="r1", task_id="t", rollout_index=rollout,
                         status=status, attempt=attempt)


@pytest.fixture()
def client(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as conn:
        yield conn


@pytest.fixture()
def producer(redis_url: str, tmp_path: Path) -> Iterator[httpx.Client]:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store",
                                max_rollouts_per_run=100, max_instruction_chars=1000)
    with serve_app(create_app(settings)) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def test_a_late_older_attempt_never_overwrites_the_newer_record(client: redis.Redis) -> None:
    assert record_rollout(client, _record(RolloutStatus.COMPLETED, attempt=2))
    assert not record_rollout(client, _record(RolloutStatus.ENV_ERROR, attempt=1))  # a straggler of attempt 1
    stored = load_rollout(client, "r1", "r1:t:0")
    assert stored is not None and stored.status is RolloutStatus.COMPLETED and stored.attempt == 2


def test_run_keys_expire_once_the_last_rollout_ends(client: redis.Redis) -> None:
    save_run_meta(client, RunMeta(run_id="r1", created_at=1.0, total_rollouts=2, queue="q", priority="default",
                                  rollouts_per_task=2, max_steps=1, model="m", task_ids=["t"]), ttl_s=500)
    client.incr(keys.attempt_counter("r1:t:0"))
    record_rollout(client, _record(RolloutStatus.COMPLETED, 1, rollout=0), ttl_s=500)
    assert client.ttl(keys.run_meta("r1")) == -1 and client.ttl(keys.run_results("r1")) == -1  # still running
    assert 0 < client.ttl(keys.attempt_counter("r1:t:0")) <= 500  # a finished rollout's counter expires
    record_rollout(client, _record(RolloutStatus.RUNNING, 1, rollout=1), ttl_s=500)
    record_rollout(client, _record(RolloutStatus.AGENT_FAIL, 1, rollout=1), ttl_s=500)
    for key in (keys.run_meta("r1"), keys.run_results("r1"), keys.run_terminal("r1")):
        assert 0 < client.ttl(key) <= 500, key


def test_run_is_finished_from_counters_agrees_with_the_summary(client: redis.Redis) -> None:
    assert run_is_finished(client, "r1") is None  # unknown run
    save_run_meta(client, RunMeta(run_id="r1", created_at=1.0, total_rollouts=2, queue="q", priority="default",
                                  rollouts_per_task=2, max_steps=1, model="m", task_ids=["t"]), ttl_s=500)
    steps = [(_record(RolloutStatus.COMPLETED, 1, rollout=0), False),
             (_record(RolloutStatus.ENV_ERROR, 1, rollout=1), True),  # terminal: both rollouts done
             (_record(RolloutStatus.QUEUED, 2, rollout=1), False),  # retried after all: not done again
             (_record(RolloutStatus.AGENT_FAIL, 2, rollout=1), True)]
    for record, finished in steps:
        record_rollout(client, record, ttl_s=500)
        summary = summarize_run(client, "r1")
        assert summary is not None and summary.finished is finished
        assert run_is_finished(client, "r1") is finished, record.status


def test_idempotency_key_has_a_ttl_and_a_retry_completes_a_crashed_enqueue(
        client: redis.Redis, redis_url: str) -> None:
    settings = ProducerSettings(redis_url=redis_url, enqueue_batch=2, run_ttl_s=900)
    request = RunRequest.model_validate({"tasks": [_task("a"), _task("b"), _task("c")], "idempotency_key": "k1"})
    first = enqueue_run(client, request, settings)
    assert first.enqueued == 3 and 0 < client.ttl(keys.idempotency("k1")) <= 900
    # The producer died after the first batch: rollout c was never enqueued, the run never marked complete.
    Job.fetch(rq_job_id(first.run_id, "c", 0), connection=client).delete()
    client.delete(keys.run_enqueued(first.run_id))
    retry = enqueue_run(client, request, settings)
    assert (retry.run_id, retry.enqueued, retry.already_present) == (first.run_id, 1, 2)
    assert Queue(keys.QUEUE_NAMES["default"], connection=client).count == 3
    again = enqueue_run(client, request, settings)  # complete now: nothing more
    assert (again.run_id, again.enqueued, again.created) == (first.run_id, 0, False)


def test_list_runs_with_a_huge_limit_is_a_422(producer: httpx.Client) -> None:
    response = producer.get("/v1/runs", params={"limit": "99999999999999999999"})
    assert response.status_code == 422, response.text
    assert "limit" in response.json()["error"]


def test_too_many_rollouts_or_a_huge_instruction_is_a_422_naming_it(producer: httpx.Client, redis_url: str) -> None:
    response = producer.post("/v1/runs", json={"tasks": [_task("a"), _task("b")], "rollouts_per_task": 51})
    assert response.status_code == 422 and "102 rollouts" in response.json()["error"]
    assert "PRODUCER_MAX_ROLLOUTS_PER_RUN" in response.json()["error"]
    response = producer.post("/v1/runs", json={"tasks": [_task("a", "x" * 1001)]})
    assert response.status_code == 422 and "tasks.0.instruction" in response.json()["error"]
    assert "1001 characters" in response.json()["error"]
    assert Queue(keys.QUEUE_NAMES["default"], connection=redis.Redis.from_url(redis_url)).count == 0
