"""The gateway app's shared state (pool, router, reloads, HTTP client, metrics), reached with `Depends`."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx
from fastapi import Request
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from services.model_gateway.discovery import ReplicaDiscovery
from services.model_gateway.reload import ReloadManager
from services.model_gateway.replicas import ReplicaPool
from services.model_gateway.routing import ConsistentRouter
from services.model_gateway.settings import GatewaySettings


class GatewayMetrics:
    """Prometheus metrics of one gateway app, in its own registry (several apps may share a process)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.in_flight = Gauge("gateway_replica_in_flight", "In-flight requests per replica", ["replica"],
                               registry=registry)
        self.latency = Histogram("gateway_upstream_latency_seconds", "Upstream time to response headers (s)",
                                 ["replica"], registry=registry)
        self.retries = Counter("gateway_retries_total", "Requests retried on another replica", registry=registry)
        self.decisions = Counter("gateway_routing_decisions_total", "Routing decisions", ["decision"],
                                 registry=registry)
        self.version_waits = Counter("gateway_version_waits_total",
                                     "Requests that waited for a replica of their policy version", registry=registry)
        self.conflicts = Counter("gateway_version_conflicts_total",
                                 "Requests responded with 409: no replica serves an accepted policy version",
                                 registry=registry)
        self.abandoned = Counter("gateway_client_gone_total", "Requests whose client left before the response",
                                 registry=registry)
        self.overhead = Histogram("gateway_overhead_seconds", "Gateway time excluding upstream time (s)",
                                  registry=registry,
                                  buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0))


@dataclass
class GatewayState:
    """Everything the routes share. The lifespan opens `client`, the one pooled `httpx.AsyncClient` to the replicas
    (completions, health checks, reloads, `/v1/models`)."""

    settings: GatewaySettings
    pool: ReplicaPool
    discovery: ReplicaDiscovery
    router: ConsistentRouter
    reloads: ReloadManager
    metrics: GatewayMetrics
    registry: CollectorRegistry
    timeout: httpx.Timeout
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    @property
    def client(self) -> httpx.AsyncClient:
        """The shared upstream HTTP client. Raises: RuntimeError outside the app lifespan."""
        if not self.clients:
            raise RuntimeError("the gateway's HTTP client is not started (outside the app lifespan)")
        return self.clients[0]


async def get_state(request: Request) -> GatewayState:
    """FastAPI dependency: the app's `GatewayState` (async: FastAPI runs a sync dependency in its threadpool)."""
    state: GatewayState = request.app.state.gateway
    return state
