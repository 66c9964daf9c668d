"""The gateway app: an OpenAI-compatible proxy (vLLM OpenAI-compatible server API) over N replicas, with
policy-version routing and rolling weight reloads for RL.

Routes: `proxy.py` (`/v1/*`), `admin.py` (`/admin/*`), `sessions.py` (`/v1/sessions`, `/sessions/{id}/v1/*`),
plus `/healthz` and `/metrics` (per-app registry). The lifespan owns the shared `httpx.AsyncClient`, the
health-check loop, any running reload, and the sessions (their Redis publisher and idle-expiry sweep).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import httpx
from fastapi import FastAPI, Request
from prometheus_client import CollectorRegistry
from starlette.types import Receive, Scope, Send

from common.auth import warn_if_open
from common.dns import Resolver, resolve_ipv4
from common.eventshards import EventShardSettings
from common.service import add_health_and_metrics
from services.model_gateway import admin, proxy, sessions
from services.model_gateway.discovery import ReplicaDiscovery
from services.model_gateway.health import health_loop
from services.model_gateway.reload import ReloadManager
from services.model_gateway.reload_methods import make_method
from services.model_gateway.replicas import ReplicaPool
from services.model_gateway.routing import ConsistentRouter
from services.model_gateway.session_store import SessionManager, StreamPublisher
from services.model_gateway.settings import GatewaySettings
from services.model_gateway.state import GatewayMetrics, GatewayState
from services.model_gateway.upstream import UpstreamClient

log = logging.getLogger(__name__)


def build_state(settings: GatewaySettings, resolver: Resolver = resolve_ipv4) -> GatewayState:
    """The app state for `settings`; its replicas are `settings.replica_urls` with DNS names resolved once
    (the health loop resolves them again; the HTTP client is opened by the lifespan)."""
    initial = None if settings.model_version == "unknown" else settings.model_version
    pool = ReplicaPool(unhealthy_after=settings.unhealthy_after, cooldown_s=settings.breaker_cooldown_s)
    discovery = ReplicaDiscovery(pool, settings.replica_urls, resolver, version=initial)
    discovery.sync()
    router = ConsistentRouter(pool, settings.sticky_ttl_s, settings.max_sessions, epsilon=settings.load_epsilon)
    registry = CollectorRegistry()
    state = GatewayState(
        settings=settings, pool=pool, discovery=discovery, router=router, metrics=GatewayMetrics(registry),
        registry=registry,
        timeout=httpx.Timeout(connect=settings.connect_timeout_s, read=settings.read_timeout_s,
                              write=settings.write_timeout_s, pool=settings.pool_timeout_s),
        reloads=ReloadManager(pool, lambda: state.client,
                              lambda name: make_method(name, settings.reload_command),  # type: ignore[arg-type]
                              settings.reload_method),
    )
    return state


PROXY_PATHS = frozenset({"/v1/chat/completions", "/v1/completions"})


class GatewayApp:
    """ASGI front of the gateway: completion POSTs go straight to `proxy.forward` (the same function the FastAPI
    routes call, without FastAPI's routing, middleware and dependency solving: about 1 ms of CPU less per
    request, measured with bench/gateway_overhead.py); everything else, lifespan included, to `app`."""

    def __init__(self, app: FastAPI, state: GatewayState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Dispatch one ASGI connection."""
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in PROXY_PATHS:
            response = await proxy.forward(Request(scope, receive), scope["path"], self.state)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(settings: GatewaySettings | None = None, resolver: Resolver = resolve_ipv4) -> GatewayApp:
    """Build the gateway app over `settings.replica_urls` (defaults: env vars `GATEWAY_*`), DNS names
    resolved by `resolver` (the system resolver unless a test passes a stand-in)."""
    settings = settings or GatewaySettings()
    state = build_state(settings, resolver)
    limits = httpx.Limits(max_connections=settings.max_connections,
                          max_keepalive_connections=max(1, settings.max_connections // 5), keepalive_expiry=30.0)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        warn_if_open(settings.admin_token, "GATEWAY_ADMIN_TOKEN", "the /admin routes")
        warn_if_open(settings.api_keys, "GATEWAY_API_KEYS", "the OpenAI routes (/v1)")
        client = httpx.AsyncClient(timeout=state.timeout, limits=limits)
        state.clients[:] = [client]
        upstream = UpstreamClient(limit_per_replica=settings.max_connections)
        state.upstreams[:] = [upstream]
        task = asyncio.create_task(health_loop(state.pool, client, settings.health_interval_s,
                                               settings.health_timeout_s, state.discovery))
        publisher = StreamPublisher(settings.redis_url, EventShardSettings().event_shards,
                                    settings.session_publish_timeout_s)
        app.state.sessions = SessionManager(publisher, settings.session_ttl_s, settings.session_run_id,
                                            close_wait_s=settings.request_timeout_s)
        expiry = asyncio.create_task(app.state.sessions.run_expiry(settings.session_sweep_interval_s))
        try:
            yield
        finally:
            for job in (task, expiry):
                job.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await job
            await publisher.close()
            await state.reloads.stop()
            await client.aclose()
            upstream.close()
            state.clients.clear()
            state.upstreams.clear()

    app = FastAPI(title="cua-rollout model gateway", lifespan=lifespan)
    app.state.gateway = state
    add_health_and_metrics(app, check=lambda: {"replicas": len(state.pool.replicas),
                                               "routable": len(state.pool.routable())},
                           registry=state.registry)
    app.include_router(proxy.router)
    app.include_router(admin.router)
    app.include_router(sessions.router)
    return GatewayApp(app, state)
