"""`python -m services.desktop_env`: start the desktop (Xvfb, D-Bus, openbox), then serve the
OSWorld VM server protocol with uvicorn until SIGTERM/SIGINT, then stop the desktop.

The desktop starts before the server listens, so `/healthz` answering means the env is ready. The
session's core processes also get SIGTERM from the kernel if this process is killed outright.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Callable

import uvicorn
from fastapi import FastAPI

from common.service import setup_logging
from services.desktop_env.server import create_app
from services.desktop_env.session import DesktopSession
from services.desktop_env.settings import DesktopEnvSettings

log = logging.getLogger("services.desktop_env")


def main() -> None:
    """Read `DESKTOP_*` settings, run the env until a signal, clean up. Exit code 1 on start failure."""
    serve(create_app)


def serve(make_app: Callable[[DesktopEnvSettings, DesktopSession], FastAPI]) -> None:
    """Start the desktop of the `DESKTOP_*` settings, serve `make_app(settings, session)` until
    SIGTERM/SIGINT, then stop the desktop."""
    settings = DesktopEnvSettings()
    setup_logging(settings.log_level)
    # Until uvicorn installs its own handlers, SIGTERM unwinds through `finally` like SIGINT does.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    session = DesktopSession(settings)
    session.start()
    try:
        # The server's own relative paths resolve like OSWorld's (its server runs in ~).
        os.chdir(settings.home)
        server = uvicorn.Server(uvicorn.Config(make_app(settings, session), host=settings.host,
                                               port=settings.port, log_level="warning"))
        server.run()  # uvicorn handles SIGTERM/SIGINT: graceful shutdown, then returns
    finally:
        session.stop()
        log.info("desktop %s stopped", settings.env_id)


if __name__ == "__main__":
    main()
