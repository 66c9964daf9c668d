"""The gateway app: an OpenAI-compatible proxy (vLLM OpenAI-compatible server API) over N replicas, with
policy-version routing and rolling weight reloads for RL.

Routes (all FastAPI routes: middleware applies to every one): `proxy.py` (`/v1/*`), `admin.py` (`/admin/*`),
`sessions.py` (`/v1/sessions`, `/sessions/{id}/v1/*`), plus `/healthz` and `/metrics` (per-app registry). The
lifespan owns the one pooled `httpx.AsyncClient` to the replicas (`replica_client`), the health-check loop, any
running reload, and the sessions (their Redis publisher and idle-expiry sweep).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx
from fastapi import FastAPI, Request, Response
from prometheus_client import CollectorRegistry

from common.auth import reveal, warn_if_open
from common.dns import Resolver, resolve_ipv4
from common.eventshards import EventShardSettings
from common.service import add_health_and_metrics
from services.model_gateway import admin, proxy, sessions
from services.model_gateway.discovery import ReplicaDiscovery
from services.model_gateway.forwarding import RequestRejected
from services.model_gateway.health import health_loop, readiness
from services.model_gateway.reload import ReloadManager
from services.model_gateway.reload_methods import make_method
from services.model_gateway.replicas import ReplicaPool
from services.model_gateway.routing import ConsistentRouter
from services.model_gateway.session_store import SessionManager, StreamPublisher
from services.model_gateway.settings import GatewaySettings
from services.model_gateway.state import GatewayMetrics, GatewayState

log = logging.getLogger(__name__)


def build_state(settings: GatewaySettings, resolver: Resolver = resolve_ipv4) -> GatewayState:
    """The app state for `settings`; its replicas are `settings.replica_urls` with DNS names resolved once
    (the health loop resolves them again; the HTTP client is opened by the lifespan)."""
    initial = None if settings.model_version == "unknown" else settings.model_version
    pool = ReplicaPool(unhealthy_after=settings.unhealthy_after, cooldown_s=settings.breaker_cooldown_s)
    discovery = ReplicaDiscovery(pool, settings.replica_urls, resolver, version=initial)
    discovery.sync()
    router = ConsistentRouter(pool, settings.sticky_ttl_s, settings.max_sessions, epsilon=settings.load_epsilon,
                              policy=settings.routing)
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


#: Idle connections to a replica are closed after this (s): vLLM's server is uvicorn, whose keep-alive timeout is 5 s;
#: reusing a connection the replica is closing would fail a request already sent (never resent: `forwarding.py`).
KEEPALIVE_S = 4.0


def replica_client(settings: GatewaySettings, timeout: httpx.Timeout) -> httpx.AsyncClient:
    """The gateway's one pooled HTTP/1.1 client to its replicas: at most `max_connections` open (all of them may
    stay idle for `KEEPALIVE_S`), `timeout` by default, no proxy from the environment, no cookie jar (a replica's
    `Set-Cookie` is relayed, never stored and sent with another client's request), and
    `Authorization: Bearer $GATEWAY_REPLICA_API_KEY` when that is set."""
    limits = httpx.Limits(max_connections=settings.max_connections,
                          max_keepalive_connections=settings.max_connections, keepalive_expiry=KEEPALIVE_S)
    key = reveal(settings.replica_api_key)
    return httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False,
                             cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
                             headers={"authorization": f"Bearer {key}"} if key else None)


async def _rejected(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestRejected)
    return exc.response


def create_app(settings: GatewaySettings | None = None, resolver: Resolver = resolve_ipv4) -> FastAPI:
    """Build the gateway app over `settings.replica_urls` (defaults: env vars `GATEWAY_*`), DNS names
    resolved by `resolver` (the system resolver unless a test passes a stand-in)."""
    settings = settings or GatewaySettings()
    state = build_state(settings, resolver)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        warn_if_open(settings.admin_token, "GATEWAY_ADMIN_TOKEN", "the /admin routes")
        warn_if_open(settings.api_keys, "GATEWAY_API_KEYS", "the OpenAI routes (/v1)")
        client = replica_client(settings, state.timeout)
        state.clients[:] = [client]
        task = asyncio.create_task(health_loop(state.pool, client, settings.health_interval_s,
                                               settings.health_timeout_s, state.discovery,
                                               settings.engine_metrics))
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
            state.clients.clear()

    app = FastAPI(title="cua-rollout model gateway", lifespan=lifespan)
    app.state.gateway = state
    add_health_and_metrics(app, check=lambda: readiness(state.pool), registry=state.registry)
    app.include_router(proxy.router)
    app.include_router(admin.router)
    app.include_router(sessions.manage)
    app.include_router(sessions.router)
    app.add_exception_handler(RequestRejected, _rejected)
    return app
