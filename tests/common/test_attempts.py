"""`common.attempts` on a real redis-server: attempt numbers, and the failed envs in a real RQ job's meta."""

from __future__ import annotations

import redis
from rq import Queue
from rq.job import Job

from common import attempts


def test_attempts_count_from_one_per_rollout(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    assert attempts.current(client, "run:t:0") == 0
    assert [attempts.start(client, "run:t:0") for _ in range(3)] == [1, 2, 3]
    assert attempts.current(client, "run:t:0") == 3
    assert attempts.current(client, "run:t:1") == 0


def test_failed_envs_travel_in_the_rq_jobs_meta(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    assert attempts.failed_envs(None) == []
    job = Queue("test-attempts", connection=client).enqueue("builtins.print", "x")
    attempts.note_failed_env(job, "env-a")
    attempts.note_failed_env(job, "env-b")
    assert attempts.failed_envs(Job.fetch(job.id, connection=client)) == ["env-a", "env-b"]  # saved, not only local
