"""The env pod's HTTP server: the OSWorld VM server protocol (xlang-ai/OSWorld
`desktop_env/server/main.py`) on one desktop session, plus `POST /reset`, `/healthz`, `/metrics`.

Routes live in `routes/` (one `APIRouter` per domain) and reach the env through
`Depends(pod.get_pod)`. Success replies have OSWorld's shapes (JSON fields, or text where its
server returns text), so its own `PythonController` and `SetupController` drive this server.
Errors the protocol knows (a missing file, a bad request, a failure OSWorld's server also returns
500) are `operations.OperationError`s; returned as `schemas.ErrorReply` JSON with an `error` key;
malformed requests are 400s naming the bad fields. Anything else is a bug: it is logged and
returned as a plain 500 by the framework, never dressed up as a protocol reply.

Deliberate differences from OSWorld are listed in the route modules (`/execute` timeouts are
200 replies, window routes wait for their window, `/home/user` maps onto the env's home).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from common.service import add_health_and_metrics
from services.desktop_env import x11
from services.desktop_env.operations import OperationError
from services.desktop_env.pod import Pod
from services.desktop_env.routes import ROUTERS
from services.desktop_env.schemas import ErrorReply
from services.desktop_env.session import DesktopSession
from services.desktop_env.settings import DesktopEnvSettings
from services.desktop_env.zygote import Zygote

log = logging.getLogger(__name__)


def error_response(status_code: int, message: str) -> JSONResponse:
    """The JSON error reply (`schemas.ErrorReply`) with `status_code`."""
    return JSONResponse(ErrorReply(message=message, error=message).model_dump(), status_code=status_code)


def _describe(exc: RequestValidationError) -> str:
    problems = []
    for error in exc.errors():
        parts = [str(part) for part in error.get("loc", ()) if part != "body"]
        where = "body" if error.get("type") == "json_invalid" else ".".join(parts) or "body"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return "Invalid request: " + "; ".join(problems)


def create_app(settings: DesktopEnvSettings, session: DesktopSession | None = None) -> FastAPI:
    """The FastAPI app of one env. With no `session`, the app creates one from `settings`, starts it
    on startup and stops it on shutdown; a given `session` must be started and is not stopped.
    The env's zygote (see `zygote`) is started on startup and stopped on shutdown either way."""
    owns_session = session is None
    desktop = session or DesktopSession(settings)
    pod = Pod(settings, desktop, Zygote(desktop.commands, desktop.runtime_dir))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if owns_session:
            desktop.start()
        pod.zygote.start()
        app.state.pod = pod
        try:
            yield
        finally:
            pod.zygote.stop()
            if owns_session:
                desktop.stop()

    app = FastAPI(title="cua-rollout desktop env (OSWorld VM server protocol)", lifespan=lifespan)

    def health() -> dict[str, object]:
        if not desktop.core_alive():
            raise RuntimeError("Xvfb, D-Bus or openbox exited")
        width, height = x11.screen_size(desktop.display)
        return {"env_id": settings.env_id, "display": desktop.display, "width": width, "height": height}

    add_health_and_metrics(app, health)

    @app.exception_handler(OperationError)
    async def _operation_error(_request: Request, exc: OperationError) -> JSONResponse:
        return error_response(exc.status_code, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, _describe(exc))

    for router in ROUTERS:
        app.include_router(router)
    return app
