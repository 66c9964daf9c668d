"""`common.httpclient`: the runner's libcurl plumbing against a real loopback server (uvicorn)."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from common.httpclient import HttpClient, HttpError, HttpResponse, send, shared
from common.polling import free_port
from tests.servers import serve_app


async def echo(request: Request) -> JSONResponse:
    """The request as the server saw it: content type, JSON or form fields (file fields as their bytes)."""
    kind = request.headers.get("content-type", "")
    out: dict[str, object] = {"content_type": kind.split(";")[0], "x_test": request.headers.get("x-test")}
    if kind.startswith("application/json"):
        out["json"] = await request.json()
    elif kind:
        form = await request.form()
        out["form"] = {k: v if isinstance(v, str) else (v.filename, (await v.read()).decode())
                       for k, v in form.items()}
    return JSONResponse(out)


async def slow(request: Request) -> Response:
    await asyncio.sleep(2)
    return Response("late")


APP = Starlette(routes=[
    Route("/echo", echo, methods=["POST"]),
    Route("/slow", slow),
    Route("/teapot", lambda r: Response("short and stout", status_code=418)),
    Route("/moved", lambda r: RedirectResponse("/echo")),
])


def test_bodies_are_sent_as_requests_and_httpx_send_them() -> None:
    pool = HttpClient()
    with serve_app(APP) as url:
        def post(**body: object) -> dict[str, object]:
            response = send(pool, "POST", f"{url}/echo", connect_timeout_s=2, read_timeout_s=5,
                            headers={"X-Test": "yes"}, **body)  # type: ignore[arg-type]
            assert response.is_success and response.status_code == 200
            return response.json()  # type: ignore[no-any-return]

        assert post(json={"a": [1, "é"]}) == {
            "content_type": "application/json", "x_test": "yes", "json": {"a": [1, "é"]}}
        assert post(data={"file_path": "/tmp/a b&c"}) == {
            "content_type": "application/x-www-form-urlencoded", "x_test": "yes", "form": {"file_path": "/tmp/a b&c"}}
        assert post(data={"file_path": "/x"}, files={"file_data": ("file", b"bytes")}) == {
            "content_type": "multipart/form-data", "x_test": "yes",
            "form": {"file_path": "/x", "file_data": ["file", "bytes"]}}


def test_statuses_are_answers_and_redirects_are_not_followed() -> None:
    pool = HttpClient()
    with serve_app(APP) as url:
        teapot = send(pool, "GET", f"{url}/teapot", connect_timeout_s=2, read_timeout_s=5)
        assert (teapot.status_code, teapot.is_success, teapot.text) == (418, False, "short and stout")
        moved = send(pool, "GET", f"{url}/moved", connect_timeout_s=2, read_timeout_s=5)
        assert moved.status_code == 307 and moved.headers["location"].endswith("/echo")
        with pytest.raises(ValueError):
            teapot.json()


def test_transport_failures_raise_http_error() -> None:
    pool = HttpClient()
    with pytest.raises(HttpError):  # nothing listens there
        send(pool, "GET", f"http://127.0.0.1:{free_port()}/", connect_timeout_s=2, read_timeout_s=2)
    with serve_app(APP) as url, pytest.raises(HttpError, match="timed out"):
        send(pool, "GET", f"{url}/slow", connect_timeout_s=2, read_timeout_s=0.2)


def test_shared_pools_are_per_process() -> None:
    parent = shared("test-key")
    assert shared("test-key") is parent
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a new pool, never the parent's (its sockets are the parent's)
        os.write(write_end, b"1" if shared("test-key") is not parent else b"0")
        os._exit(0)
    os.close(write_end)
    assert os.read(read_end, 1) == b"1"
    os.waitpid(pid, 0)
    os.close(read_end)


def test_one_client_serves_threads_at_once() -> None:
    """A request waiting for its answer in one thread does not hold up another thread's request through the same
    client (each thread sends through its own libcurl handle)."""
    client = HttpClient()
    with serve_app(APP) as url:
        slow_answer: list[HttpResponse] = []
        waiting = threading.Thread(target=lambda: slow_answer.append(
            send(client, "GET", f"{url}/slow", connect_timeout_s=2, read_timeout_s=10)))
        waiting.start()
        teapot = send(client, "GET", f"{url}/teapot", connect_timeout_s=2, read_timeout_s=5)
        assert teapot.status_code == 418
        assert not slow_answer and waiting.is_alive()  # answered while the slow request (2 s) still waits
        waiting.join(10)
        assert slow_answer and slow_answer[0].text == "late"
    client.close()
