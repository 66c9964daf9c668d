"""Operations: RQ queue statistics and the env pool."""

from __future__ import annotations

from typing import Annotated, Any

import redis
from fastapi import APIRouter, Depends
from pydantic import BaseModel

from common.envpool import EnvPool
from services.task_producer.deps import get_redis
from services.task_producer.queueing import queue_stats

router = APIRouter(tags=["ops"])


class QueueList(BaseModel):
    """Per RQ queue: `queue`, `priority`, `depth`, `started`, `failed`, `deferred`, `scheduled`,
    `finished`, `workers`."""

    queues: list[dict[str, Any]]


class EnvPoolView(BaseModel):
    """The env pool: counts, and each env's `env_id`, `url`, `provider`, `flavor`, `state`, lease."""

    total: int
    leased: int
    idle: int
    unhealthy: int
    envs: list[dict[str, Any]]


@router.get("/v1/queues", response_model=QueueList)
def get_queues(client: Annotated[redis.Redis, Depends(get_redis)]) -> QueueList:
    """Per RQ queue: depth, started, failed, deferred, scheduled, finished, workers."""
    return QueueList(queues=queue_stats(client))


@router.get("/v1/envs", response_model=EnvPoolView)
def get_envs(client: Annotated[redis.Redis, Depends(get_redis)]) -> EnvPoolView:
    """Env pool: total, leased, idle, unhealthy, and each env's state."""
    status = EnvPool(client).status()
    return EnvPoolView(total=status.total, leased=status.leased, idle=status.idle, unhealthy=status.unhealthy,
                       envs=status.envs)
