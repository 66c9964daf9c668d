"""Serve an ASGI app over real HTTP on a free loopback port, in a thread, for tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from common.env_client import DesktopEnvClient
from common.polling import free_port, wait_until


@contextmanager
def serve_app(app: Any, port: int | None = None, host: str = "127.0.0.1") -> Iterator[str]:
    """Run `app` with uvicorn on `host` (a loopback address) and yield its base URL; shut it down on exit."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, 60, f"uvicorn on port {port}")  # 10 s ran out at load ~10 (vLLM decoding)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def env_clients(urls: list[str]) -> Iterator[list[DesktopEnvClient]]:
    """One `DesktopEnvClient` per env URL, closed on exit."""
    clients = [DesktopEnvClient(url) for url in urls]
    try:
        yield clients
    finally:
        for client in clients:
            client.close()
