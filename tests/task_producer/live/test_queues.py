"""The dashboard's pipelined queue counters agree with `/v1/queues` (RQ's own counts) on real RQ queues."""

from __future__ import annotations

import redis
from rq import Queue, Worker

from common import keys
from services.task_producer.live.queues import queue_counts
from services.task_producer.queueing import queue_stats


def test_queue_counts_match_rqs_own_figures(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    default = Queue(keys.QUEUE_NAMES["default"], connection=client)
    for _ in range(3):
        default.enqueue("builtins.print", "x")
    Queue(keys.QUEUE_NAMES["high"], connection=client).enqueue("builtins.print", "y")
    failed = default.enqueue("builtins.print", "z")
    default.remove(failed)
    default.failed_job_registry.add(failed, ttl=600)
    worker = Worker([default], connection=client, name="w1")
    worker.register_birth()
    try:
        counts = queue_counts(client)
        assert counts == queue_stats(client)
        by_name = {q["queue"]: q for q in counts}
        assert (by_name[default.name]["depth"], by_name[default.name]["failed"], by_name[default.name]["workers"]) \
            == (3, 1, 1)
    finally:
        worker.register_death()
