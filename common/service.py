"""Helpers every service uses: logging set-up, Redis connection, FastAPI `/healthz` + `/metrics`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import redis
from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client import start_http_server as _start_metrics_server
from redis.backoff import ExponentialBackoff
from redis.retry import Retry


def setup_logging(level: str = "INFO") -> None:
    """One log format for all services: time, level, logger, message. httpx logs one INFO line per request
    (every health probe, every poll): those show only at DEBUG."""
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    quiet = logging.getLevelNamesMapping()[level.upper()] > logging.DEBUG
    logging.getLogger("httpx").setLevel(logging.WARNING if quiet else logging.NOTSET)


#: Retries of a Redis command after a connection error, with backoff 0.1 s doubling to 1 s: about 12 s,
#: so a Redis restart (AOF reload) is ridden out instead of failing the caller.
REDIS_CONNECTION_RETRIES = 15


def redis_client(url: str, decode_responses: bool = False, socket_timeout_s: float | None = 30.0) -> redis.Redis:
    """A Redis client with explicit timeouts (never library defaults): 5 s connect, 30 s socket, and
    `REDIS_CONNECTION_RETRIES` retries on connection errors (a restart), never on timeouts.

    Pass `socket_timeout_s=None` for connections that block on purpose (RQ's BLPOP dequeue).
    """
    return redis.Redis.from_url(
        url,
        decode_responses=decode_responses,
        socket_connect_timeout=5,
        socket_timeout=socket_timeout_s,
        health_check_interval=30,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.1), REDIS_CONNECTION_RETRIES),
        retry_on_error=[redis.ConnectionError],
    )


def add_health_and_metrics(
    app: FastAPI,
    check: Callable[[], dict[str, object]] | None = None,
    registry: CollectorRegistry = REGISTRY,
) -> None:
    """Mount `GET /healthz` (200 `{"status": "ok", ...}` or 503 when `check` raises) and `GET /metrics`."""

    @app.get("/healthz", tags=["ops"])
    def healthz(response: Response) -> dict[str, object]:
        try:
            details = check() if check else {}
        except Exception as exc:  # a failing dependency makes the service unhealthy, not crashed
            response.status_code = 503
            return {"status": "unhealthy", "error": str(exc)}
        return {"status": "ok", **details}

    @app.get("/metrics", tags=["ops"])
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def start_metrics_port(port: int, addr: str = "0.0.0.0", registry: CollectorRegistry = REGISTRY) -> None:
    """Serve Prometheus `/metrics` of `registry` on a small side port (runner and sink, which have no
    HTTP API). Port 0 disables it. Runs in a daemon thread. A port in use is logged, not fatal (a
    restarted runner whose killed predecessor left an RQ scheduler child holding it keeps working).
    """
    if port:
        try:
            _start_metrics_server(port, addr=addr, registry=registry)
        except OSError as exc:  # e.g. still held by an orphan of a killed predecessor: serve without metrics
            logging.getLogger(__name__).error("metrics port %d unavailable (%s): no /metrics", port, exc)


def run_in_thread(target: Callable[[], None], name: str) -> threading.Thread:
    """Start `target` in a daemon thread named `name` and return it."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread
