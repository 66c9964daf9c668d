"""Active health checks: poll every replica's `GET /health` (vLLM's liveness probe) on an interval, and read its
load from `GET /metrics` (vLLM's running and waiting requests, `engine_load.py`) after each successful probe.

A 200 within the timeout counts as a probe success (see `ReplicaPool.record_success`: it moves an open
breaker past its cooldown to half-open and closes a half-open one); a connect error, timeout or non-200 is a
failure. A replica that sends `X-Model-Version` on its health response (the scripted policy does) has its
version recorded, so requests that ask for a version can be routed before its first completion. The load scrape
never counts as a health failure: a replica without vLLM's metrics keeps `engine = None`.

Readiness (`readiness`, the gateway's `GET /healthz`, its Kubernetes readiness probe and compose healthcheck):
ready while at least one replica can serve (not draining, breaker not open); at zero the gateway says so with
a 503 naming the count, so no load balancer sends it work that can only wait (issue 34, point 6).
"""

from __future__ import annotations

import asyncio
import logging

import httpx

from services.model_gateway.discovery import ReplicaDiscovery
from services.model_gateway.engine_load import scrape_engine_load
from services.model_gateway.replicas import ReplicaPool

log = logging.getLogger(__name__)


class NotReady(RuntimeError):
    """No replica can serve: `/healthz` answers 503 with this message."""


def readiness(pool: ReplicaPool) -> dict[str, object]:
    """`{"replicas": n, "routable": m}` (routable now; a half-open replica whose one trial is in flight is not)
    when at least one replica can serve (not draining, breaker not open).
    Raises: NotReady naming how many replicas there are and why none serves."""
    replicas = pool.list_replicas()
    serving = [r for r in replicas if not r.draining and r.healthy]
    if not serving:
        draining = sum(1 for r in replicas if r.draining)
        raise NotReady(f"not ready: 0 of {len(replicas)} replicas routable ({draining} draining, "
                       f"{sum(1 for r in replicas if not r.healthy)} with an open breaker)")
    return {"replicas": len(replicas), "routable": len(pool.routable())}


async def check_once(pool: ReplicaPool, client: httpx.AsyncClient, timeout_s: float,
                     engine_metrics: bool = True) -> None:
    """One round of concurrent probes, each bounded by `timeout_s` seconds; with `engine_metrics`, a healthy
    replica's `/metrics` is read too (bounded by `timeout_s`) into `Replica.engine`."""

    async def probe(replica_id: str) -> None:
        replica = pool.get(replica_id)
        if replica is None:
            return
        try:
            response = await client.get(f"{replica.url}/health", timeout=httpx.Timeout(timeout_s))
            ok = response.status_code == 200
        except httpx.HTTPError:
            ok, response = False, None
        if ok and response is not None:
            was = replica.breaker
            pool.record_success(replica, probe=True)
            if replica.breaker != was:
                log.info("replica %s breaker %s -> %s", replica.id, was.value, replica.breaker.value)
            if not replica.reloading:
                pool.set_version(replica, response.headers.get("x-model-version"))
            if engine_metrics:
                replica.engine = await scrape_engine_load(client, replica.url, timeout_s)
        else:
            replica.engine = None
            was_healthy = replica.healthy
            pool.record_failure(replica)
            if was_healthy and not replica.healthy:
                log.warning("replica %s breaker open", replica.id)

    await asyncio.gather(*(probe(rid) for rid in list(pool.replicas)))


async def health_loop(pool: ReplicaPool, client: httpx.AsyncClient, interval_s: float, timeout_s: float,
                      discovery: ReplicaDiscovery | None = None, engine_metrics: bool = True) -> None:
    """Every `interval_s` seconds until cancelled (the app lifespan cancels it): re-resolve the replicas'
    DNS names (`discovery`, when given), then `check_once` (with `engine_metrics`)."""
    while True:
        try:
            if discovery is not None:
                await discovery.refresh()
            await check_once(pool, client, timeout_s, engine_metrics)
        except Exception:  # a bug in one round must not stop health checking
            log.exception("health check round failed")
        await asyncio.sleep(interval_s)
