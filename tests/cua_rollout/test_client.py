"""`RolloutClient.submit` is typed: an unknown keyword or a field of the wrong type is a TypeError and a wrong value
a ValueError, each naming the field, before any HTTP (a real server counts the requests it got); a valid call
sends the fields given and nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request

from common.run import Priority, SamplingParams
from common.task import OSWorldTask
from cua_rollout.client import RolloutClient, run_request_body
from tests.servers import serve_app

TASK = {"id": "t1", "instruction": "do it", "evaluator": {"func": "infeasible"}}


@pytest.fixture(scope="module")
def recorder() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A stand-in producer that records each `POST /v1/runs` body."""
    received: list[dict[str, Any]] = []
    app = FastAPI()

    @app.post("/v1/runs", status_code=201)
    async def runs(request: Request) -> dict[str, Any]:
        received.append(await request.json())
        return {"run_id": "r1", "enqueued": 1}

    with serve_app(app) as url:
        yield url, received


@pytest.mark.parametrize(("fields", "error", "names"), [
    ({"rollouts_per_task": "8"}, TypeError, "rollouts_per_task"),
    ({"max_steps": 2.5}, TypeError, "max_steps"),
    ({"metadata": ["x"]}, TypeError, "metadata"),
    ({"sampling": {"temperature": "hot"}}, TypeError, "sampling.temperature"),
    ({"rollouts_per_task": 0}, ValueError, "rollouts_per_task"),
    ({"priority": "urgent"}, ValueError, "priority"),
    ({"agent": "no-such-agent"}, ValueError, "agent"),
    ({"run_id": "../x"}, ValueError, "run_id"),
    ({"max_staleness": 2}, ValueError, "run: max_staleness needs policy_version"),
])
def test_bad_fields_fail_before_any_request(recorder: tuple[str, list[dict[str, Any]]], fields: dict[str, Any],
                                           error: type[Exception], names: str) -> None:
    url, received = recorder
    before = len(received)
    with RolloutClient(url) as client, pytest.raises(error, match=names):
        client.submit([TASK], **fields)
    assert len(received) == before


def test_unknown_keyword_and_bad_tasks(recorder: tuple[str, list[dict[str, Any]]]) -> None:
    url, received = recorder
    before = len(received)
    with RolloutClient(url) as client:
        with pytest.raises(TypeError, match="rollouts"):
            client.submit([TASK], rollouts=8)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="tasks"):
            client.submit(TASK)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="tasks.0.instruction: Field required"):
            client.submit([{"id": "t2", "evaluator": {"func": "infeasible"}}])
    assert len(received) == before


def test_valid_submit_sends_only_given_fields(recorder: tuple[str, list[dict[str, Any]]]) -> None:
    url, received = recorder
    with RolloutClient(url) as client:
        with pytest.raises(ValueError, match="duplicate task id 't1'"):
            client.submit([OSWorldTask.model_validate(TASK), TASK])
        run = client.submit([OSWorldTask.model_validate(TASK), {**TASK, "id": "t2"}], rollouts_per_task=4,
                            priority=Priority.HIGH, sampling=SamplingParams(temperature=0.5),
                            metadata={"step": 120}, run_id="r1")
    assert run.run_id == "r1" and run.enqueued == 1
    body = received[-1]
    assert set(body) == {"tasks", "rollouts_per_task", "priority", "sampling", "metadata", "run_id"}
    assert body["rollouts_per_task"] == 4 and body["priority"] == "high" and body["sampling"] == {"temperature": 0.5}
    assert body["tasks"] == [TASK, {**TASK, "id": "t2"}]
    assert run_request_body([TASK], {"priority": "low", "model": None}) == {"tasks": [TASK], "priority": "low"}
