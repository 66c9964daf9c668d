"""Attempt bookkeeping of a rollout, in one place: which attempt is running and where earlier ones failed.

An attempt is one run of a rollout's RQ job (1-based). `start` counts it in Redis (`keys.attempt_counter`,
INCR: a retried or re-run job gets the next number even when its process died), and events and records carry
that number, so the sink keeps only the newest attempt's steps. The env ids of attempts that failed for
infrastructure reasons travel in the RQ job's meta (`FAILED_ENVS_META`), so the next attempt leases another
env when one is free (`common.envpool.EnvPool.lease(avoid=...)`).
"""

from __future__ import annotations

from typing import Any

import redis

from common import keys
from common import redis_typed as rt

#: `Job.meta` key listing the env ids where earlier attempts of the rollout failed.
FAILED_ENVS_META = "failed_envs"


def start(client: redis.Redis, rollout_id: str) -> int:
    """Count a new attempt of `rollout_id`; returns its number (1 for the first). Raises: redis.RedisError."""
    return rt.incr(client, keys.attempt_counter(rollout_id))


def current(client: redis.Redis, rollout_id: str) -> int:
    """The number of the rollout's latest attempt; 0 when none started. Raises: redis.RedisError."""
    return rt.get_int(client, keys.attempt_counter(rollout_id))


def failed_envs(rq_job: Any) -> list[str]:
    """The env ids where earlier attempts of the RQ job `rq_job` failed (empty without a job)."""
    return list(rq_job.meta.get(FAILED_ENVS_META, [])) if rq_job is not None else []


def note_failed_env(rq_job: Any, env_id: str) -> None:
    """Add `env_id` to the RQ job's failed envs and save the job's meta. Raises: redis.RedisError."""
    rq_job.meta[FAILED_ENVS_META] = [*failed_envs(rq_job), env_id]
    rq_job.save_meta()
