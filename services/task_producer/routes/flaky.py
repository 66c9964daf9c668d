"""Flaky tasks across runs and the quarantine list the producer applies (tasks on it are recorded
`quarantined` instead of running)."""

from __future__ import annotations

from typing import Annotated

import redis
from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel

from common import keys
from common import redis_typed as rt
from common.flaky import FlakyReport, flaky_tasks
from common.ids import TASK_ID_MAX, TASK_ID_PATTERN
from common.runstate import list_run_ids, load_rollouts, load_run_meta
from services.task_producer.deps import get_redis

router = APIRouter(tags=["flaky"])
TaskIdPath = Annotated[str, Path(min_length=1, max_length=TASK_ID_MAX, pattern=TASK_ID_PATTERN)]


class Quarantine(BaseModel):
    """Task ids on the quarantine list, sorted."""

    task_ids: list[str]


@router.get("/v1/flaky", response_model=FlakyReport)
def get_flaky(client: Annotated[redis.Redis, Depends(get_redis)],
              runs: Annotated[int, Query(ge=1, le=1000, description="newest runs to look at")] = 50,
              min_runs: Annotated[int, Query(ge=1, le=1000, description="runs a version needs to show variance")] = 2,
              ) -> FlakyReport:
    """Tasks whose outcome varies under one policy version across runs, or that often end in
    infrastructure failures, with their rates; most unstable first."""
    run_ids = list_run_ids(client, runs)
    metas = {run_id: load_run_meta(client, run_id) for run_id in run_ids}
    data = [(run_id, meta.policy_version, load_rollouts(client, run_id).values())
            for run_id, meta in metas.items() if meta is not None]
    return FlakyReport(runs=len(data), tasks=flaky_tasks(data, min_runs=min_runs))


def _quarantine(client: redis.Redis) -> Quarantine:
    return Quarantine(task_ids=sorted(rt.text(m) for m in rt.smembers(client, keys.QUARANTINE)))


@router.get("/v1/quarantine", response_model=Quarantine)
def get_quarantine(client: Annotated[redis.Redis, Depends(get_redis)]) -> Quarantine:
    """The quarantine list: tasks new runs record as `quarantined` instead of running."""
    return _quarantine(client)


@router.put("/v1/quarantine/{task_id}", response_model=Quarantine)
def add_to_quarantine(task_id: TaskIdPath, client: Annotated[redis.Redis, Depends(get_redis)]) -> Quarantine:
    """Put a task on the quarantine list (idempotent); runs submitted from now on skip it."""
    client.sadd(keys.QUARANTINE, task_id)
    return _quarantine(client)


@router.delete("/v1/quarantine/{task_id}", response_model=Quarantine)
def remove_from_quarantine(task_id: TaskIdPath, client: Annotated[redis.Redis, Depends(get_redis)]) -> Quarantine:
    """Take a task off the quarantine list (idempotent)."""
    client.srem(keys.QUARANTINE, task_id)
    return _quarantine(client)


def quarantined_ids(client: redis.Redis, task_ids: list[str]) -> set[str]:
    """Which of `task_ids` are on the quarantine list."""
    if not task_ids:
        return set()
    flags = rt.smismember(client, keys.QUARANTINE, task_ids)
    return {task_id for task_id, flag in zip(task_ids, flags, strict=True) if flag}
