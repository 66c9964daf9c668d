"""Runs: submit (`POST /v1/runs`), list, read, cancel (SPEC section 3)."""

from __future__ import annotations

from typing import Annotated, Any

import redis
from fastapi import APIRouter, Depends, HTTPException, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from common.run import RunRequest
from common.runstate import RunSummary, list_run_ids, summarize_run
from services.task_producer.adaptive import curriculum_named
from services.task_producer.deps import RunIdPath, get_redis, get_settings
from services.task_producer.limits import limit_errors
from services.task_producer.metrics import ROLLOUTS_ENQUEUED, RUNS_REJECTED, RUNS_SUBMITTED
from services.task_producer.queueing import cancel_run, enqueue_run, unsupported_message, unsupported_tasks
from services.task_producer.routes.flaky import quarantined_ids
from services.task_producer.settings import ProducerSettings

router = APIRouter(tags=["runs"])


class RunSubmitted(BaseModel):
    """What `POST /v1/runs` did: rollouts enqueued now, already present (a re-submission), and
    those recorded without running (`unsupported` tasks with `on_unsupported: "skip"`,
    `quarantined` tasks)."""

    run_id: str
    enqueued: int
    already_present: int
    created: bool
    unsupported: dict[str, list[str]] = Field(description="task id -> features the runner lacks")
    quarantined: list[str]
    skipped: int
    status_url: str


class RunList(BaseModel):
    """Newest runs first, summaries without their rollout records."""

    runs: list[RunSummary]


class RunCancelled(BaseModel):
    """`DELETE /v1/runs/{run_id}`: how many queued rollouts were cancelled."""

    run_id: str
    cancelled_queued: int


def _rejected(error: str, detail: list[dict[str, Any]] | None = None) -> JSONResponse:
    RUNS_REJECTED.inc()
    return JSONResponse(status_code=422, content={"error": error, **({"detail": detail} if detail else {})})


@router.post("/v1/runs", status_code=201, response_model=RunSubmitted,
             responses={200: {"model": RunSubmitted, "description": "a re-submission: nothing new enqueued"},
                        422: {"description": "`{error, detail}` naming the bad field or unsupported feature"}})
def submit_run(request: RunRequest, response: Response, client: Annotated[redis.Redis, Depends(get_redis)],
               settings: Annotated[ProducerSettings, Depends(get_settings)]) -> Any:
    """Accept a run: tasks x rollouts_per_task rollouts, one RQ job each (deterministic ids).

    A task using a setup type, getter or metric the runner does not implement gets the run a 422
    naming task and feature (nothing enqueued), or with `on_unsupported: "skip"` its rollouts are
    recorded as `unsupported` and the others run. Tasks on the quarantine list are recorded
    `quarantined`.
    """
    too_big = limit_errors(request, settings)
    if too_big:
        return _rejected("; ".join(f"{'.'.join(str(p) for p in e['loc'] if p != 'body')}: {e['msg']}"  # type: ignore[attr-defined]
                                   for e in too_big), too_big)
    if request.adaptive is not None:
        try:
            curriculum_named(request.adaptive.curriculum)
        except KeyError as exc:
            return _rejected(f"adaptive.curriculum: {exc.args[0]}")
    unsupported = unsupported_tasks(request.tasks)
    if unsupported and request.on_unsupported == "reject":
        detail = [{"loc": ["body", "tasks", i], "task_id": t.id, "unsupported": unsupported[t.id]}
                  for i, t in enumerate(request.tasks) if t.id in unsupported]
        return _rejected(unsupported_message(request.tasks, unsupported)
                         + " (implemented: `cua-rollout coverage`; or submit with on_unsupported='skip')", detail)
    quarantined = quarantined_ids(client, [t.id for t in request.tasks])
    result = enqueue_run(client, request, settings, skip=unsupported, quarantined=quarantined)
    if not result.created and result.enqueued == 0:
        response.status_code = 200
    RUNS_SUBMITTED.inc()
    ROLLOUTS_ENQUEUED.inc(result.enqueued)
    return RunSubmitted(run_id=result.run_id, enqueued=result.enqueued, already_present=result.already_present,
                        created=result.created, unsupported=unsupported, quarantined=sorted(quarantined),
                        skipped=result.skipped, status_url=f"/v1/runs/{result.run_id}")


@router.get("/v1/runs", response_model=RunList)
def list_runs(client: Annotated[redis.Redis, Depends(get_redis)],
              limit: Annotated[int, Query(ge=1, le=10000)] = 50) -> RunList:
    """Newest runs first, each with its summary counts."""
    summaries = (summarize_run(client, run_id) for run_id in list_run_ids(client, limit))
    return RunList(runs=[s for s in summaries if s is not None])


@router.get("/v1/runs/{run_id}", response_model=RunSummary)
def get_run(run_id: RunIdPath, client: Annotated[redis.Redis, Depends(get_redis)],
            rollouts: bool = True) -> RunSummary:
    """Counts by status, success rate, mean timings (ms), and per-rollout records. 404 when unknown."""
    summary = summarize_run(client, run_id, include_rollouts=rollouts)
    if summary is None:
        raise HTTPException(404, f"run {run_id!r} not found")
    return summary


@router.delete("/v1/runs/{run_id}", response_model=RunCancelled)
def delete_run(run_id: RunIdPath, client: Annotated[redis.Redis, Depends(get_redis)]) -> RunCancelled:
    """Cancel a run: queued rollouts are cancelled, running ones stop at their next step."""
    try:
        cancelled = cancel_run(client, run_id)
    except KeyError:
        raise HTTPException(404, f"run {run_id!r} not found") from None
    return RunCancelled(run_id=run_id, cancelled_queued=cancelled)
