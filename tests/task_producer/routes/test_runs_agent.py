"""`POST /v1/runs` with an agent: its options are checked against the catalogue and completed with the
defaults in every rollout's job (real Redis, the producer over real HTTP)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from common import keys, rqjobs
from common.run import RolloutJob
from services.task_producer.api import create_app
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app


@pytest.fixture()
def producer(redis_url: str, tmp_path: Path) -> Iterator[httpx.Client]:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store")
    with serve_app(create_app(settings)) as url, httpx.Client(base_url=url, timeout=10) as client:
        yield client


def test_agent_and_its_options_reach_every_rollout_job_with_the_defaults(producer: httpx.Client,
                                                                          redis_url: str) -> None:
    task = {"id": "t1", "instruction": "do it", "evaluator": {"func": "infeasible"}}
    response = producer.post("/v1/runs", json={"tasks": [task], "rollouts_per_task": 2, "agent": "osworld_prompt",
                                               "agent_options": {"observation_type": "som"}})
    assert response.status_code == 201, response.text
    queue = rqjobs.queue(keys.QUEUE_NAMES["default"], redis.Redis.from_url(redis_url))
    jobs = [RolloutJob.model_validate(job.kwargs["payload"]) for job in queue.get_jobs()]
    assert len(jobs) == 2
    assert {job.agent for job in jobs} == {"osworld_prompt"}
    assert jobs[0].agent_options == {"action_space": "pyautogui", "observation_type": "som",
                                     "max_trajectory_length": 3, "a11y_tree_max_tokens": 10000}
