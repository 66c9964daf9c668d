"""Starts an RQ worker for rollouts: forking worker (heartbeats), with the scheduler, queues by priority."""

from __future__ import annotations

import logging

from rq import Queue, Worker

from common import keys
from common.envpool import EnvPool, resolve_static_urls
from common.service import redis_client, setup_logging, start_metrics_port
from common.settings import comma_list
from services.runner.settings import RunnerSettings

log = logging.getLogger(__name__)


def register_static_envs(settings: RunnerSettings) -> int:
    """Register `RUNNER_ENV_URLS` (DNS names expanded to every address) in the env pool; returns the count."""
    urls = resolve_static_urls(settings.env_url_list)
    pool = EnvPool(redis_client(settings.redis_url))
    for url in urls:
        pool.register(url, provider=settings.env_provider)
    return len(urls)


def run_worker(settings: RunnerSettings | None = None) -> bool:
    """Run a forking RQ worker on the rollout queues until stopped (or drained with RUNNER_BURST).

    Queue order is high, default, low unless `RUNNER_QUEUES` (comma-separated names) says otherwise.
    Returns RQ's `work()` result.
    """
    settings = settings or RunnerSettings()
    setup_logging(settings.log_level)
    start_metrics_port(settings.metrics_port)
    if settings.env_url_list:
        log.info("registered %d static envs", register_static_envs(settings))
    client = redis_client(settings.redis_url, socket_timeout_s=None)  # RQ blocks in BLPOP
    names = comma_list(settings.queues) or keys.QUEUES_IN_PRIORITY_ORDER
    queues = [Queue(name, connection=client) for name in names]
    worker = Worker(queues, connection=client)
    return bool(worker.work(with_scheduler=settings.with_scheduler, burst=settings.burst,
                            logging_level=settings.log_level))
