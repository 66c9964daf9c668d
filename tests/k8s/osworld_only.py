"""`python -m tests.k8s.osworld_only`: a server that speaks ONLY OSWorld's VM server protocol.

It is our desktop env (`services.desktop_env`) with every route OSWorld's server
(xlang-ai/OSWorld `desktop_env/server/main.py`) lacks removed: no `/reset`, no `/healthz`, no
`/metrics` (those answer 404, as on an OSWorld VM). Every request's method and path is appended to
the file `OSWORLD_REQUEST_LOG` (when set), so a test can show which endpoints a runner called. It
reads the same `DESKTOP_*` settings as the env pod.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from fastapi.routing import APIRoute

from services.desktop_env.__main__ import serve
from services.desktop_env.server import create_app
from services.desktop_env.session import DesktopSession
from services.desktop_env.settings import DesktopEnvSettings

#: Routes of our env that OSWorld's VM server does not have.
NOT_OSWORLD = frozenset({"/reset", "/healthz", "/metrics"})


def osworld_only_app(settings: DesktopEnvSettings, session: DesktopSession, request_log: str | None) -> FastAPI:
    """Our env app without the non-OSWorld routes, logging each request to `request_log`."""
    app = create_app(settings, session)
    app.router.routes = [r for r in app.router.routes if not (isinstance(r, APIRoute) and r.path in NOT_OSWORLD)]

    @app.middleware("http")
    async def log_requests(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if request_log:
            with open(request_log, "a") as out:
                out.write(f"{request.method} {request.url.path}\n")
        return await call_next(request)

    return app


def main() -> None:
    """Start the desktop, serve the OSWorld-only app until SIGTERM, stop the desktop."""
    serve(lambda settings, session: osworld_only_app(settings, session, os.environ.get("OSWORLD_REQUEST_LOG")))


if __name__ == "__main__":
    main()
