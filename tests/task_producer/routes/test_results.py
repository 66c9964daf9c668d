"""Producer results routes over real HTTP and a real redis-server: finished rollouts streamed as
server-sent events (resumable), run statistics and run diffs, through the typed Python client.

Rollout records are written with `record_rollout`, the function the runner records with."""

from __future__ import annotations

import threading
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


@pytest.fixture
def producer_url(redis_url: str, tmp_path: Any) -> Iterator[str]:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store")
    with serve_app(create_app(settings)) as url:
        yield url


def _submit(client: RolloutClient, run_id: str, tasks: int, rollouts: int) -> None:
    tasks_json = [{"id": f"t{i}", "instruction": f"do t{i}", "evaluator": {"func": "infeasible"}, "snapshot": "os"}
                  for i in range(tasks)]
    client.submit(tasks_json, rollouts_per_task=rollouts, run_id=run_id)


def _finish(redis_url: str, run_id: str, task: str, index: int, reward: float | None,
            status: RolloutStatus = RolloutStatus.COMPLETED) -> None:
    record_rollout(redis.Redis.from_url(redis_url), RolloutRecord(
        rollout_id=f"{run_id}__{task}__{index}", run_id=run_id, task_id=task, rollout_index=index, domain="os",
        status=status, reward=reward, duration_ms=1000.0, model_ms=400.0, env_ms=300.0))


def test_events_stream_each_finished_rollout_once_and_resume_from_a_cursor(producer_url: str, redis_url: str) -> None:
    with RolloutClient(producer_url) as client:
        _submit(client, "run-sse", tasks=2, rollouts=2)
        _finish(redis_url, "run-sse", "t0", 0, 1.0)
        _finish(redis_url, "run-sse", "t0", 0, 1.0)  # a repeated terminal record is announced once
        _finish(redis_url, "run-sse", "t0", 1, 0.0, RolloutStatus.AGENT_FAIL)
        events = client.iter_finished("run-sse")
        first = [next(events).rollout_id, next(events).rollout_id]
        assert first == ["run-sse__t0__0", "run-sse__t0__1"]
        cursor = client.last_cursor
        # the last two finish while a second stream, resumed from the cursor, is waiting for them
        resumed: list[str] = []
        reader = threading.Thread(target=lambda: resumed.extend(
            r.rollout_id for r in RolloutClient(producer_url).iter_finished("run-sse", cursor=cursor)))
        reader.start()
        _finish(redis_url, "run-sse", "t1", 0, None, RolloutStatus.ENV_ERROR)
        _finish(redis_url, "run-sse", "t1", 1, 1.0)
        reader.join(timeout=30)
        assert not reader.is_alive(), "the stream did not end once every rollout was terminal"
        assert resumed == ["run-sse__t1__0", "run-sse__t1__1"]
        assert [r.rollout_id for r in client.iter_finished("run-sse")] == [
            "run-sse__t0__0", "run-sse__t0__1", "run-sse__t1__0", "run-sse__t1__1"]


def test_events_reject_an_unknown_run_and_a_malformed_cursor(producer_url: str) -> None:
    with RolloutClient(producer_url) as client:
        with pytest.raises(RolloutClientError, match="404"):
            list(client.iter_finished("no-such-run"))
        _submit(client, "run-c", tasks=1, rollouts=1)
    response = httpx.get(f"{producer_url}/v1/runs/run-c/events", params={"cursor": "../etc"})
    assert response.status_code == 422 and "'../etc' is not an event id" in response.text


def test_stats_and_diff_routes(producer_url: str, redis_url: str) -> None:
    with RolloutClient(producer_url) as client:
        _submit(client, "run-a", tasks=2, rollouts=2)
        _submit(client, "run-b", tasks=2, rollouts=2)
        for index in (0, 1):
            _finish(redis_url, "run-a", "t0", index, 0.0)
            _finish(redis_url, "run-a", "t1", index, 1.0)
            _finish(redis_url, "run-b", "t0", index, 1.0)
            _finish(redis_url, "run-b", "t1", index, 1.0)
        stats = client.stats("run-a")
        assert (stats.overall.successes, stats.overall.n) == (2, 4)
        assert stats.pass_at_k == {1: pytest.approx(0.5), 2: pytest.approx(0.5)}
        assert stats.overall.low is not None and stats.overall.low < 0.5 < (stats.overall.high or 0)
        diff = client.diff("run-a", "run-b")
        assert {t.task_id: t.change for t in diff.tasks} == {"t0": "fixed", "t1": "unchanged"}
        assert diff.domains[0].delta == pytest.approx(0.5)
        with pytest.raises(RolloutClientError, match="run 'nope' not found"):
            client.diff("run-a", "nope")
    assert httpx.get(f"{producer_url}/openapi.json").json()["paths"]["/v1/runs/{run_id}/stats"]["get"][
        "responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/RunStats"}
