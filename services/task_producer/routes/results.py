"""Results for trainers and evaluators: finished rollouts streamed as server-sent events, run
statistics (success with Wilson intervals, pass@k, latency, cost) and run-to-run diffs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

import redis
from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from common.rundiff import RunDiff, diff_runs
from common.runstate import (
    RolloutRecord,
    load_rollouts,
    load_run_meta,
    read_finished,
    run_is_finished,
    submitted_rollouts,
    summarize_run,
)
from common.stats import RunStats, run_stats
from services.task_producer.deps import RunIdPath, get_redis

router = APIRouter(tags=["results"])

#: How long one blocking read of the finished-rollouts stream waits (ms); keep-alive pings fill gaps.
EVENTS_BLOCK_MS = 2000


def _records(client: redis.Redis, run_id: str) -> tuple[list[RolloutRecord], int]:
    """The run's rollout records and how many rollouts it has. Raises: HTTPException(404)."""
    meta = load_run_meta(client, run_id)
    if meta is None:  # the existence check reads no rollout records
        raise HTTPException(404, f"run {run_id!r} not found")
    return list(load_rollouts(client, run_id).values()), submitted_rollouts(client, meta)


@router.get("/v1/runs/{run_id}/stats", response_model=RunStats)
def get_run_stats(run_id: RunIdPath, client: Annotated[redis.Redis, Depends(get_redis)]) -> RunStats:
    """The benchmark score (sum of rewards over every rollout submitted; failures without a reward count
    0, rollouts that never ran by decision are left out; both listed), overall and per domain; then the
    success rate over rewarded rollouts, overall and per domain with Wilson 95 % intervals, unbiased pass@k
    (Chen et al. 2021) for k up to the rollouts per task, latency p50/p95 per part (ms) and cost per
    success (env-seconds, model-seconds, tokens). 404 when the run is unknown."""
    records, submitted = _records(client, run_id)
    return run_stats(run_id, records, submitted)


@router.get("/v1/runs/{run_a}/diff/{run_b}", response_model=RunDiff)
def get_run_diff(run_a: RunIdPath, run_b: RunIdPath, client: Annotated[redis.Redis, Depends(get_redis)]) -> RunDiff:
    """Per task fixed / broken / unchanged from run A to run B, and per domain the success rates
    with Fisher's exact test. 404 naming the run when either is unknown."""
    return diff_runs(run_a, _records(client, run_a)[0], run_b, _records(client, run_b)[0])


@router.get(
    "/v1/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}},
                     "description": "`rollout` events (data: a rollout record, id: the cursor), then `end`"}},
)
async def stream_run_events(
    run_id: RunIdPath,
    request: Request,
    client: Annotated[redis.Redis, Depends(get_redis)],
    cursor: Annotated[str | None, Query(description="resume after this event id")] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Server-sent events: one `rollout` event per rollout of the run as it finishes (its record as
    JSON; the event id is the resume cursor), then one `end` event once every rollout is terminal.
    Resume with `?cursor=ID` or the standard `Last-Event-ID` header. 404 when the run is unknown;
    422 when the cursor is not a stream id (`<ms>-<seq>`)."""
    if await run_in_threadpool(load_run_meta, client, run_id) is None:
        raise HTTPException(404, f"run {run_id!r} not found")
    start = cursor or last_event_id or "0-0"
    if not _is_stream_id(start):
        raise HTTPException(422, f"cursor {start!r} is not an event id like '1700000000000-0'")
    return EventSourceResponse(_events(client, run_id, start, request), ping=15)


def _is_stream_id(value: str) -> bool:
    ms, _, seq = value.partition("-")
    return ms.isdigit() and seq.isdigit()


async def _events(client: redis.Redis, run_id: str, cursor: str, request: Request) -> AsyncIterator[Any]:
    block_ms: int | None = None  # the first read of each round never blocks: a finished run ends at once
    while not await request.is_disconnected():
        batch = await run_in_threadpool(read_finished, client, run_id, cursor, 100, block_ms)
        for entry_id, record in batch:
            cursor = entry_id
            yield ServerSentEvent(data=record.model_dump_json(), event="rollout", id=entry_id)
        if batch:
            block_ms = None
            continue
        if await run_in_threadpool(run_is_finished, client, run_id) is not False:  # O(1): no summary per round
            summary = await run_in_threadpool(summarize_run, client, run_id)
            yield ServerSentEvent(data=summary.model_dump_json() if summary else "{}", event="end")
            return
        block_ms = EVENTS_BLOCK_MS
