"""Flaky tasks across runs and the quarantine list, over the producer's real HTTP API and a real
redis-server; rollout results are recorded with `record_rollout`, as the runner records them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from common.runstate import RolloutRecord, record_rollout
from common.status import RolloutStatus
from cua_rollout.client import RolloutClient, RolloutClientError
from services.task_producer.api import create_app
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app

TOKEN = "s3cret-token"


@pytest.fixture
def producer_url(redis_url: str, tmp_path: Any) -> Iterator[str]:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store", api_token=TOKEN)
    with serve_app(create_app(settings)) as url:
        yield url


def _task(task_id: str) -> dict[str, Any]:
    return {"id": task_id, "instruction": f"do {task_id}", "evaluator": {"func": "infeasible"}, "snapshot": "os"}


def _record(redis_url: str, run_id: str, task_id: str, index: int, status: RolloutStatus,
            reward: float | None) -> None:
    record_rollout(redis.Redis.from_url(redis_url), RolloutRecord(
        rollout_id=f"{run_id}:{task_id}:{index}", run_id=run_id, task_id=task_id, rollout_index=index,
        status=status, reward=reward))


def test_flaky_lists_varying_and_infra_failing_tasks_and_quarantine_skips_them(producer_url: str,
                                                                                redis_url: str) -> None:
    with RolloutClient(producer_url, token=TOKEN) as client:
        for run_id, coin in (("week-1", 1.0), ("week-2", 0.0)):  # the same policy version, twice
            client.submit([_task("coin"), _task("steady"), _task("shaky-env")], rollouts_per_task=2,
                          run_id=run_id, policy_version="v7")
            for index in (0, 1):
                _record(redis_url, run_id, "coin", index, RolloutStatus.COMPLETED, coin)
                _record(redis_url, run_id, "steady", index, RolloutStatus.COMPLETED, 1.0)
                _record(redis_url, run_id, "shaky-env", index,
                        RolloutStatus.ENV_ERROR if index else RolloutStatus.COMPLETED, None if index else 1.0)
        report = client.flaky()
        listed = {(t.task_id, t.policy_version): t for t in report.tasks}
        assert set(listed) == {("coin", "v7"), ("shaky-env", "v7")}
        assert listed[("coin", "v7")].reasons == ["outcome varies"] and listed[("coin", "v7")].success_rate == 0.5
        assert listed[("shaky-env", "v7")].infra_failure_rate == 0.5
        assert listed[("coin", "v7")].runs == 2

        assert client.quarantine(["coin"]) == ["coin"]
        run = client.submit([_task("coin"), _task("steady")], rollouts_per_task=2, run_id="week-3")
        assert (run.enqueued, run.skipped) == (2, 2)
        statuses = {(r.task_id, r.status.value) for r in client.run("week-3").rollouts}
        assert ("coin", "quarantined") in statuses
        assert client.quarantine(["coin"], remove=True) == []
    with RolloutClient(producer_url) as anonymous, pytest.raises(RolloutClientError, match="401"):
        anonymous.quarantine(["steady"])
    # `%2F` is decoded to `/` before routing: `../x` is two path segments where the route has one, so no route
    # matches (404); a single segment that is not a task id reaches the route and is a 422 naming it.
    traversal = httpx.put(f"{producer_url}/v1/quarantine/..%2Fx", headers={"Authorization": f"Bearer {TOKEN}"})
    assert (traversal.status_code, traversal.json()) == (404, {"detail": "Not Found"}), traversal.text
    dots = httpx.put(f"{producer_url}/v1/quarantine/%2e%2e", headers={"Authorization": f"Bearer {TOKEN}"})
    assert dots.status_code == 422 and dots.json()["error"].startswith("path.task_id:"), dots.text
    listed = httpx.get(f"{producer_url}/v1/quarantine", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert listed["task_ids"] == [], listed  # neither refused id was quarantined
