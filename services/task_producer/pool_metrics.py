"""Queue depth and env-pool use as Prometheus gauges on the producer's `/metrics`, read from Redis
at scrape time (a custom collector: nothing to keep in sync between scrapes).

- `cua_queue_jobs{queue, state}`: RQ jobs per queue in `waiting`, `started`, `failed`, `scheduled`;
- `cua_queue_workers{queue}`: workers listening on the queue;
- `cua_envs{state}`: envs of the pool `leased`, `idle`, `unhealthy`.
"""

from __future__ import annotations

from collections.abc import Iterator

import redis
from prometheus_client import REGISTRY, CollectorRegistry, Metric
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from common.envpool import EnvPool
from services.task_producer.queueing import queue_stats


class PoolCollector(Collector):
    """Collects the gauges above from Redis on each scrape. A Redis error fails the scrape (shown
    by Prometheus as `up == 0`), never reports zeros."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def collect(self) -> Iterator[GaugeMetricFamily]:
        jobs = GaugeMetricFamily("cua_queue_jobs", "RQ jobs per queue and state", labels=["queue", "state"])
        workers = GaugeMetricFamily("cua_queue_workers", "RQ workers listening on the queue", labels=["queue"])
        for queue in queue_stats(self.client):
            for state, key in (("waiting", "depth"), ("started", "started"), ("failed", "failed"),
                               ("scheduled", "scheduled")):
                jobs.add_metric([queue["queue"], state], queue[key])
            workers.add_metric([queue["queue"]], queue["workers"])
        status = EnvPool(self.client).status()
        envs = GaugeMetricFamily("cua_envs", "Envs of the pool by state", labels=["state"])
        for state in ("leased", "idle", "unhealthy"):
            envs.add_metric([state], getattr(status, state))
        yield jobs
        yield workers
        yield envs


class _ProcessMetrics(Collector):
    """This process's default-registry metrics (the producer's counters, process/GC stats)."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def producer_registry(client: redis.Redis) -> CollectorRegistry:
    """The registry the producer's `/metrics` serves: its own counters plus the pool gauges of
    `client`'s Redis (one registry per app, so several apps in one process never collide)."""
    registry = CollectorRegistry()
    registry.register(_ProcessMetrics())
    registry.register(PoolCollector(client))
    return registry
