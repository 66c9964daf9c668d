"""The gateway app (`services/model_gateway/server.py`, `__main__.py`): `python -m services.model_gateway` serves, and
every route is a FastAPI route (middleware sees completions too)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from starlette.middleware.base import RequestResponseEndpoint

from common.polling import free_port, http_ok, wait_until
from services.model_gateway.forwarding import forward_completion
from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.state import GatewayState, get_state
from tests.model_gateway.helpers import CHAT, chat, rid, settings_for
from tests.servers import serve_app

REPO = Path(__file__).resolve().parents[2]


def test_python_dash_m_serves(replicas: list[str]) -> None:
    port = free_port()
    env = {**os.environ, "GATEWAY_PORT": str(port), "GATEWAY_REPLICAS": ",".join(replicas)}
    proc = subprocess.Popen([sys.executable, "-m", "services.model_gateway"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: proc.poll() is None and http_ok(f"http://127.0.0.1:{port}/healthz"), 20,
                   "python -m services.model_gateway")
        response = httpx.post(f"http://127.0.0.1:{port}{CHAT}", json=chat(), timeout=10)
        assert response.status_code == 200 and response.headers["X-Replica"] in {rid(u) for u in replicas}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_every_route_is_a_fastapi_route_middleware_included(replicas: list[str]) -> None:
    app = create_gateway(settings_for(replicas))
    assert isinstance(app, FastAPI)

    @app.middleware("http")
    async def tag(request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await call_next(request)
        response.headers["X-Seen"] = request.url.path
        return response

    with serve_app(app) as gw, httpx.Client(base_url=gw, timeout=10) as client:
        for method, path, body in (("POST", CHAT, chat()), ("POST", "/v1/completions", {"model": "m", "prompt": "p"}),
                                   ("GET", "/v1/models", None), ("GET", "/admin/replicas", None),
                                   ("GET", "/healthz", None)):
            response = client.request(method, path, json=body)
            assert (response.status_code, response.headers.get("X-Seen")) == (200, path), response.text
        with client.stream("POST", CHAT, json=chat(stream=True)) as streamed:
            assert streamed.headers["X-Seen"] == CHAT and streamed.read().endswith(b"data: [DONE]\n\n")


def test_another_router_forwards_a_body_of_its_own(replicas: list[str]) -> None:
    """`forward_completion` is the entry point for other routers: a body and a session key of their own."""
    app = create_gateway(settings_for(replicas))
    router = APIRouter()

    @router.post("/sessions/{session}/step", response_model=None)
    async def step(session: str, request: Request, state: GatewayState = Depends(get_state)) -> Response:
        body = json.dumps(chat()).encode()
        return await forward_completion(request, CHAT, state, body=body, session=session)

    app.include_router(router)
    with serve_app(app) as gw, httpx.Client(base_url=gw, timeout=10) as client:
        answers = [client.post(f"/sessions/s{i % 2}/step", content=b"ignored") for i in range(6)]
    assert all(a.status_code == 200 and a.json()["choices"][0]["message"]["content"] == "R0" for a in answers)
    assert len({a.headers["X-Replica"] for a in answers[0::2]}) == 1  # sticky per session
    assert len({a.headers["X-Replica"] for a in answers[1::2]}) == 1
