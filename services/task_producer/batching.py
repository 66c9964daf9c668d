"""Pipelined, unique enqueueing of RQ jobs: one round trip per batch instead of several per job.

RQ's `enqueue_job(unique=True)` runs its atomic check-save-push Lua script (`rq.scripts`) with one
round trip per job (64,000 jobs took 32 s). Here the same script is queued for a whole batch in one
non-transactional pipeline; each job is still unique atomically (a job id that exists is skipped).
Uses RQ 2's `rq.scripts` helpers and `Queue._prepare_for_queue` (rq is pinned to major 2).
"""

from __future__ import annotations

from rq import Queue
from rq.job import Job
from rq.scripts import _build_hset_args, get_unique_enqueue_script


def enqueue_unique_batch(queue: Queue, jobs: list[Job]) -> tuple[int, int]:
    """Enqueue `jobs` (created with explicit ids) at the back of `queue` in one pipeline.

    Returns (enqueued, already present). Raises: redis.RedisError (nothing of the batch may be known:
    a retry of the same batch is safe, present jobs are skipped).
    """
    if not jobs:
        return 0, 0
    script = get_unique_enqueue_script(queue.connection)
    pipe = queue.connection.pipeline(transaction=False)
    pipe.sadd(queue.redis_queues_keys, queue.key)
    for job in jobs:
        queue._prepare_for_queue(job)
        ttl = job.ttl if job.ttl is not None else -1
        script(keys=[job.key, queue.key], args=[job.id, "R", ttl, *_build_hset_args(job)], client=pipe)
    results = pipe.execute()[1:]
    enqueued = sum(1 for r in results if int(r) == 1)
    return enqueued, len(jobs) - enqueued
