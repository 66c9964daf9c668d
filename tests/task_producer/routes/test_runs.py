"""Producer API over real HTTP against a real redis-server: submission, validation, queues, cancel."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import redis
from rq import Queue
from rq.scheduler import RQScheduler

from common import keys, rqjobs
from common.envpool import EnvPool
from common.runstate import RolloutRecord, record_rollout
from common.status import RolloutStatus
from services.task_producer.api import create_app
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app


@pytest.fixture()
def producer(redis_url: str, tmp_path: Any) -> Iterator[httpx.Client]:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store")
    with serve_app(create_app(settings)) as url, httpx.Client(base_url=url, timeout=10) as client:
        yield client


def _task(task_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "instruction": f"do {task_id}", "evaluator": {"func": "infeasible"},
            "snapshot": "os", **extra}


def _depth(redis_url: str, priority: str = "default") -> int:
    return Queue(keys.QUEUE_NAMES[priority], connection=redis.Redis.from_url(redis_url)).count


def test_submit_enqueues_one_job_per_rollout_visible_in_queues(producer: httpx.Client, redis_url: str) -> None:
    response = producer.post("/v1/runs", json={"tasks": [_task("a"), _task("b")], "rollouts_per_task": 3,
                                               "run_id": "run-1", "max_steps": 5})
    assert response.status_code == 201, response.text
    assert response.json()["enqueued"] == 6
    queues = {q["priority"]: q for q in producer.get("/v1/queues").json()["queues"]}
    assert queues["default"]["depth"] == 6 and queues["high"]["depth"] == 0
    assert {"started", "failed", "deferred", "scheduled", "workers"} <= set(queues["default"])
    job_ids = Queue(keys.QUEUE_NAMES["default"], connection=redis.Redis.from_url(redis_url)).job_ids
    assert sorted(job_ids) == sorted(f"run-1__{t}__{i}" for t in "ab" for i in range(3))
    run = producer.get("/v1/runs/run-1").json()
    assert run["total"] == 6 and run["counts"] == {"queued": 6} and run["finished"] is False


def test_priority_selects_queue(producer: httpx.Client, redis_url: str) -> None:
    producer.post("/v1/runs", json={"tasks": [_task("a")], "priority": "high"}).raise_for_status()
    assert _depth(redis_url, "high") == 1 and _depth(redis_url, "default") == 0


def test_resubmission_never_duplicates_work(producer: httpx.Client, redis_url: str) -> None:
    body = {"tasks": [_task("a")], "rollouts_per_task": 2, "run_id": "run-dup"}
    assert producer.post("/v1/runs", json=body).json()["enqueued"] == 2
    again = producer.post("/v1/runs", json=body)
    assert again.status_code == 200 and again.json() == {**again.json(), "enqueued": 0, "already_present": 2}
    assert _depth(redis_url) == 2
    keyed = {"tasks": [_task("b")], "idempotency_key": "trainer-step-7"}
    first = producer.post("/v1/runs", json=keyed).json()
    second = producer.post("/v1/runs", json=keyed).json()
    assert first["run_id"] == second["run_id"] and second["enqueued"] == 0
    assert _depth(redis_url) == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tasks": []}, "tasks"),
        ({"tasks": [{"id": "a", "evaluator": {"func": "infeasible"}}]}, "tasks.0.instruction"),
        ({"tasks": [_task("a")], "rollouts_per_task": -1}, "rollouts_per_task"),
        ({"tasks": [_task("a")], "priority": "urgent"}, "priority"),
        ({"tasks": [_task("a")], "max_steps": 0}, "max_steps"),
        ({"tasks": [_task("a"), _task("a")]}, "duplicate task id"),
        ({"tasks": [_task("a", evaluator={"func": "exact_match", "conj": "xor"})]}, "tasks.0.evaluator.conj"),
        ({"tasks": [_task("a")], "agent": "gpt-agent"},
         "agent: Value error, unknown agent 'gpt-agent' (known: ui_tars_1_5, osworld_prompt, qwen_vl_computer_use"),
        ({"tasks": [_task("a")], "agent": "osworld_prompt", "agent_options": {"observation_type": "video"}},
         "agent_options: Value error, agent_options.observation_type of 'osworld_prompt' must be one of screenshot"),
        ({"tasks": [_task("a")], "agent": "osworld_prompt",
          "agent_options": {"action_space": "computer_13", "observation_type": "som"}}, "cannot be used together"),
        ({"tasks": [_task("a")], "agent_options": {"action_space": "pyautogui"}},
         "agent 'ui_tars_1_5' has no option 'action_space' (its options: history_images, language, fail_at_max_steps)"),
    ],
)
def test_bad_input_is_rejected_naming_the_field_and_enqueues_nothing(
    producer: httpx.Client, redis_url: str, body: dict[str, Any], field: str
) -> None:
    # a valid task listed before the bad part must not be enqueued either
    response = producer.post("/v1/runs", json=body)
    assert response.status_code == 422
    assert field in response.json()["error"]
    assert _depth(redis_url) == 0
    assert producer.get("/v1/runs").json()["runs"] == []


def test_invalid_json_is_a_clear_422(producer: httpx.Client) -> None:
    response = producer.post("/v1/runs", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422 and "JSON" in response.json()["error"]


def test_run_summary_counts_and_success_rate(producer: httpx.Client, redis_url: str) -> None:
    producer.post("/v1/runs", json={"tasks": [_task("a"), _task("b")], "rollouts_per_task": 2,
                                    "run_id": "run-s"}).raise_for_status()
    client = redis.Redis.from_url(redis_url)
    outcomes = [("a", 0, RolloutStatus.COMPLETED, 1.0), ("a", 1, RolloutStatus.AGENT_FAIL, 0.0),
                ("b", 0, RolloutStatus.ENV_ERROR, None)]
    for task_id, index, status, reward in outcomes:
        record_rollout(client, RolloutRecord(rollout_id=f"run-s:{task_id}:{index}", run_id="run-s", task_id=task_id,
                                             rollout_index=index, status=status, reward=reward, duration_ms=100.0))
    run = producer.get("/v1/runs/run-s").json()
    assert run["counts"] == {"completed": 1, "agent_fail": 1, "env_error": 1, "queued": 1}
    assert run["done"] == 3 and not run["finished"]
    assert run["success_rate"] == 0.5  # infra failures do not count against the policy
    assert [r["rollout_id"] for r in run["rollouts"]] == ["run-s:a:0", "run-s:a:1", "run-s:b:0"]
    assert producer.get("/v1/runs/nope").status_code == 404


def test_cancel_removes_queued_rollouts(producer: httpx.Client, redis_url: str) -> None:
    producer.post("/v1/runs", json={"tasks": [_task("a")], "rollouts_per_task": 3, "run_id": "run-c"})
    assert _depth(redis_url) == 3
    response = producer.delete("/v1/runs/run-c")
    assert response.json()["cancelled_queued"] == 3
    assert _depth(redis_url) == 0
    run = producer.get("/v1/runs/run-c").json()
    assert run["counts"] == {"cancelled": 3} and run["cancelled"] and run["finished"]
    assert producer.delete("/v1/runs/unknown").status_code == 404


def test_env_pool_view(producer: httpx.Client, redis_url: str) -> None:
    pool = EnvPool(redis.Redis.from_url(redis_url))
    for port in (5001, 5002, 5003):
        pool.register(f"http://127.0.0.1:{port}", "static")
    assert pool.try_lease("r1", 10_000) is not None
    pool.mark_unhealthy("127.0.0.1-5003")
    view = producer.get("/v1/envs").json()
    assert (view["total"], view["leased"], view["idle"], view["unhealthy"]) == (3, 1, 1, 1)


def test_health_and_metrics(producer: httpx.Client) -> None:
    assert producer.get("/healthz").json()["status"] == "ok"
    producer.post("/v1/runs", json={"tasks": [_task("a")]})
    assert "cua_producer_rollouts_enqueued_total" in producer.get("/metrics").text


UNSUPPORTED_SETUP = [{"type": "teleport", "parameters": {}}]
UNSUPPORTED_EVALUATOR = {"func": "no_such_metric", "result": {"type": "no_such_getter"}}


def test_task_with_unsupported_features_is_rejected_naming_task_and_feature(
        producer: httpx.Client, redis_url: str) -> None:
    tasks = [_task("fine"), _task("drive", config=UNSUPPORTED_SETUP),
             _task("checker", evaluator=UNSUPPORTED_EVALUATOR)]
    response = producer.post("/v1/runs", json={"tasks": tasks, "rollouts_per_task": 2, "run_id": "run-unsup"})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert "tasks.1 ('drive'): unsupported setup type 'teleport'" in error
    assert "tasks.2 ('checker'): unsupported metric 'no_such_metric', getter type 'no_such_getter'" in error
    assert [d["task_id"] for d in response.json()["detail"]] == ["drive", "checker"]
    assert _depth(redis_url) == 0  # nothing enqueued
    assert producer.get("/v1/runs/run-unsup").status_code == 404  # and no run stored


def test_skip_records_unsupported_rollouts_without_running_them(producer: httpx.Client, redis_url: str) -> None:
    tasks = [_task("fine"), _task("drive", config=UNSUPPORTED_SETUP, domain="office")]
    response = producer.post("/v1/runs", json={"tasks": tasks, "rollouts_per_task": 2, "run_id": "run-skip",
                                               "on_unsupported": "skip"})
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["enqueued"], body["skipped"]) == (2, 2)
    assert body["unsupported"] == {"drive": ["setup type 'teleport'"]}
    assert _depth(redis_url) == 2
    job_ids = Queue(keys.QUEUE_NAMES["default"], connection=redis.Redis.from_url(redis_url)).job_ids
    assert sorted(job_ids) == ["run-skip__fine__0", "run-skip__fine__1"]
    run = producer.get("/v1/runs/run-skip").json()
    assert run["counts"] == {"queued": 2, "unsupported": 2} and run["done"] == 2 and not run["finished"]
    skipped = [r for r in run["rollouts"] if r["task_id"] == "drive"]
    assert [(r["status"], r["reward"], r["domain"]) for r in skipped] == [("unsupported", None, "office")] * 2
    assert "unsupported setup type 'teleport'" in skipped[0]["error"]
    client = redis.Redis.from_url(redis_url)
    for index, reward in enumerate((1.0, 0.0)):  # the supported task's rollouts finish
        record_rollout(client, RolloutRecord(rollout_id=f"run-skip:fine:{index}", run_id="run-skip", task_id="fine",
                                             rollout_index=index, status=RolloutStatus.COMPLETED, reward=reward))
    run = producer.get("/v1/runs/run-skip").json()
    assert run["finished"] and run["success_rate"] == 0.5  # unsupported rollouts are not in the rate


def test_on_unsupported_must_be_reject_or_skip(producer: httpx.Client) -> None:
    response = producer.post("/v1/runs", json={"tasks": [_task("a")], "on_unsupported": "ignore"})
    assert response.status_code == 422 and "on_unsupported" in response.json()["error"]


def test_rollouts_keep_submission_order_and_scheduled_retries_jump_the_queue(
        producer: httpx.Client, redis_url: str) -> None:
    producer.post("/v1/runs", json={"tasks": [_task("a"), _task("b"), _task("c")], "run_id": "run-order"})
    client = redis.Redis.from_url(redis_url)
    queue = rqjobs.queue(keys.QUEUE_NAMES["default"], client)
    assert queue.job_ids == ["run-order__a__0", "run-order__b__0", "run-order__c__0"]
    job = rqjobs.fetch("run-order__c__0", client)
    assert job.retries_left == 2 and job.enqueue_at_front_on_retry  # immediate retries go to the front
    queue.remove(job)  # c failed (e.g. its work-horse died) and RQ scheduled its retry, as Job.retry does
    queue.schedule_job(job, datetime.now(UTC) - timedelta(seconds=1))
    scheduler = RQScheduler([queue], connection=client)
    scheduler.acquire_locks()
    scheduler.enqueue_scheduled_jobs()
    scheduler.release_locks()
    assert queue.job_ids == ["run-order__c__0", "run-order__a__0", "run-order__b__0"]
