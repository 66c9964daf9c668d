"""Producer HTTP API (SPEC section 3): runs, queues, env pool, trajectories, results, the dashboard.
OpenAPI at `/docs`. Each area is an `APIRouter` in `routes/` (and `ui/`); shared state (Redis,
settings, the trajectory store) reaches them through `Depends` (`deps.py`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from common.auth import warn_if_open
from common.service import add_health_and_metrics, redis_client
from services.task_producer.adaptive import AdaptiveController
from services.task_producer.deps import require_token
from services.task_producer.live.sampler import LiveSampler
from services.task_producer.metrics import RUNS_REJECTED
from services.task_producer.pool_metrics import producer_registry
from services.task_producer.routes import dashboard, flaky, ops, results, runs, trajectories
from services.task_producer.settings import ProducerSettings
from services.task_producer.ui.login import router as login_router
from services.task_producer.ui.routes import router as ui_router

#: The dashboard's scripts, style sheet and vendored chart library (uPlot, `static/vendor/uplot/VERSION`).
UI_STATIC = Path(__file__).parent / "ui" / "static"


def _field_path(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body",)]
    return ".".join(parts) or "body"


def validation_message(errors: list[dict[str, Any]]) -> str:
    """One line per error: `field.path: message` (e.g. `tasks.0.instruction: Field required`)."""
    return "; ".join(f"{_field_path(tuple(e.get('loc', ())))}: {e.get('msg', 'invalid')}" for e in errors)


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    """422 `{error, detail}`: one line naming every bad field, and pydantic's errors."""
    assert isinstance(exc, RequestValidationError)
    RUNS_REJECTED.inc()
    errors = [dict(e) for e in exc.errors()]
    for error in errors:  # `ctx` may hold exceptions that are not JSON-serialisable
        error.pop("ctx", None)
        error.pop("input", None)
    return JSONResponse(status_code=422, content={"error": validation_message(errors), "detail": errors})


def create_app(settings: ProducerSettings | None = None) -> FastAPI:
    """Build the producer app. Redis is `REDIS_URL`; trajectories are read from `STORE_URL` (opened
    on first use); the adaptive-rollouts controller and the dashboard's sampler run while the app is served."""
    settings = settings or ProducerSettings()
    client = redis_client(settings.redis_url)
    controller = AdaptiveController(client, settings)
    sampler = LiveSampler(client, settings)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        controller.start()
        sampler.start()
        yield
        sampler.stop()
        controller.stop()

    app = FastAPI(title="cua-rollout task producer", version="0.1.0", lifespan=lifespan)
    app.state.redis, app.state.settings, app.state.store = client, settings, None  # see deps.py
    app.state.sampler = sampler
    warn_if_open(settings.api_token, "PRODUCER_API_TOKEN", "the producer's API and dashboard (/v1, /ui)")
    app.add_exception_handler(RequestValidationError, _validation_error)
    add_health_and_metrics(app, check=lambda: {"redis": bool(client.ping())}, registry=producer_registry(client))
    for module in (runs, ops, dashboard, trajectories, results, flaky):
        app.include_router(module.router, dependencies=[Depends(require_token)])
    app.mount("/ui/static", StaticFiles(directory=UI_STATIC), name="ui-static")  # JS, CSS, uPlot: no secrets
    app.include_router(login_router)
    app.include_router(ui_router)  # its pages check the token themselves (a login page instead of a 401)
    return app
