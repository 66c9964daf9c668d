"""Producer security over real HTTP against a real redis-server: bearer-token auth on every `/v1` route and
the dashboard (its login page and cookie), and ids that could address objects outside their run's prefix
rejected with a 422 naming the field."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.objectstore import LocalDirStore
from services.task_producer.api import create_app
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app

TOKEN = "s3cret-tökén"  # non-ASCII on purpose: compared as bytes
ASCII_TOKEN = "s3cret-token-0123456789"


def _task(task_id: str = "a") -> dict[str, Any]:
    return {"id": task_id, "instruction": "do it", "evaluator": {"func": "infeasible"}, "snapshot": "os"}


@pytest.fixture()
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture()
def secured(redis_url: str, store_dir: Path) -> Iterator[httpx.Client]:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{store_dir}", api_token=ASCII_TOKEN)
    with serve_app(create_app(settings)) as url, httpx.Client(base_url=url, timeout=10) as client:
        yield client


@pytest.fixture()
def open_producer(redis_url: str, store_dir: Path) -> Iterator[httpx.Client]:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{store_dir}")
    with serve_app(create_app(settings)) as url, httpx.Client(base_url=url, timeout=10) as client:
        yield client


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_write_routes_need_the_token(secured: httpx.Client) -> None:
    body = {"tasks": [_task()], "run_id": "r1"}
    missing = secured.post("/v1/runs", json=body)
    assert missing.status_code == 401
    assert "missing bearer token" in missing.json()["detail"] and "PRODUCER_API_TOKEN" in missing.json()["detail"]
    assert missing.headers["www-authenticate"].startswith("Bearer")
    wrong = secured.post("/v1/runs", json=body, headers=_auth(ASCII_TOKEN + "x"))
    assert wrong.status_code == 401 and "invalid bearer token" in wrong.json()["detail"]
    basic = secured.post("/v1/runs", json=body, headers={"Authorization": f"Basic {ASCII_TOKEN}"})
    assert basic.status_code == 401
    assert secured.get("/v1/runs/r1", headers=_auth(ASCII_TOKEN)).status_code == 404  # nothing enqueued
    ok = secured.post("/v1/runs", json=body, headers=_auth(ASCII_TOKEN))
    assert ok.status_code == 201, ok.text
    assert secured.delete("/v1/runs/r1").status_code == 401
    assert secured.delete("/v1/runs/r1", headers=_auth("nope")).status_code == 401
    assert secured.get("/v1/runs/r1", headers=_auth(ASCII_TOKEN)).json()["cancelled"] is False
    assert secured.delete("/v1/runs/r1", headers=_auth(ASCII_TOKEN)).status_code == 200


def test_read_routes_need_the_token_too(secured: httpx.Client) -> None:
    for path in ("/v1/runs", "/v1/queues", "/v1/envs", "/v1/runs/r9/trajectories"):
        assert secured.get(path).status_code == 401, path
        assert secured.get(path, headers=_auth(ASCII_TOKEN)).status_code == 200, path
    for path in ("/healthz", "/metrics"):  # probes and Prometheus stay open
        assert secured.get(path).status_code == 200, path


def test_dashboard_logs_in_with_the_token(secured: httpx.Client) -> None:
    first = secured.get("/ui")
    assert first.status_code == 303 and first.headers["location"] == "/ui/login"
    assert secured.get("/ui/login").status_code == 200
    wrong = secured.post("/ui/login", data={"token": "nope"})
    assert wrong.status_code == 401 and "wrong token" in wrong.text and "cua_token" not in wrong.headers.get(
        "set-cookie", "")
    ok = secured.post("/ui/login", data={"token": ASCII_TOKEN})
    assert ok.status_code == 303 and ok.headers["location"] == "/ui"
    cookie = ok.headers["set-cookie"]
    assert "cua_token=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    # the client keeps the cookie: the dashboard and the API (screenshots of the viewer) answer
    assert secured.get("/ui").status_code == 200
    assert secured.get("/v1/queues").status_code == 200
    secured.cookies.clear()
    assert secured.get("/v1/queues").status_code == 401


def test_non_ascii_token_compares_as_bytes(redis_url: str, store_dir: Path) -> None:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{store_dir}", api_token=TOKEN)
    with serve_app(create_app(settings)) as url:
        # HTTP headers are latin-1 on the wire: a UTF-8 token arrives as its latin-1 reading, never equal.
        wrong = httpx.post(f"{url}/v1/runs", json={"tasks": [_task()]}, timeout=10,
                           headers={"Authorization": b"Bearer s3cret-t\xc3\xb6k\xc3\xa9" + b"X"})
        assert wrong.status_code == 401


def test_no_token_means_open_writes_and_a_warning(redis_url: str, store_dir: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="common.auth"):
        app = create_app(ProducerSettings(redis_url=redis_url, store_url=f"file://{store_dir}"))
    assert any("PRODUCER_API_TOKEN is not set" in r.getMessage() for r in caplog.records)
    with serve_app(app) as url:
        assert httpx.post(f"{url}/v1/runs", json={"tasks": [_task()]}, timeout=10).status_code == 201


def test_token_is_not_in_the_settings_repr() -> None:
    assert ASCII_TOKEN not in repr(ProducerSettings(api_token=ASCII_TOKEN))


TRAVERSAL_IDS = ["../x", "..", "/etc", "a/b", "%2e%2e", "a%2fb", "a\x00b", "a\nb", "a b", "\u2024\u2024",
                 "\uff0e\uff0e", "a\u2215b", "ａ", "x" * 200, "-x", "a__b"]


@pytest.mark.parametrize("bad", TRAVERSAL_IDS)
def test_submitted_run_and_task_ids_are_validated(open_producer: httpx.Client, bad: str) -> None:
    response = open_producer.post("/v1/runs", json={"tasks": [_task()], "run_id": bad})
    assert response.status_code == 422 and response.json()["error"].startswith("run_id:"), response.text
    if bad != "a__b":  # `__` is fine inside a task id
        response = open_producer.post("/v1/runs", json={"tasks": [_task(bad)]})
        assert response.status_code == 422 and response.json()["error"].startswith("tasks.0.id:"), response.text


#: Ids that match no route are 404s: the server decodes `%2F` to `/` before routing, so `..%2F..%2Fetc` is three
#: path segments where the route has one; a literal `..` is removed by the client (RFC 3986 dot segments), so
#: `/v1/trajectories/run1/..` is sent as `/v1/trajectories`. A single segment that is not an id of
#: `common.ids`' shape reaches its route and is a 422 naming the path parameter.
@pytest.mark.parametrize(("path", "status", "error"), [
    ("/v1/runs/..%2F..%2Fetc", 404, None), ("/v1/runs/%2e%2e", 422, "path.run_id:"),
    ("/v1/runs/%00", 422, "path.run_id:"), ("/v1/runs/%E2%80%A4%E2%80%A4", 422, "path.run_id:"),
    ("/v1/runs/%2e%2e/trajectories", 422, "path.run_id:"), ("/v1/trajectories/run1/..", 404, None),
    ("/v1/trajectories/run1/%2e%2e/x", 422, "path.name:"), ("/v1/trajectories/run1/t_0/%2e%2e", 422, "path.file:"),
    ("/v1/trajectories/run1/t_0/a%00.png", 422, "path.file:"), ("/v1/trajectories/%2e%2e/t_0/x", 422, "path.run_id:"),
    (f"/v1/trajectories/run1/t_0/{'a' * 300}", 422, "path.file:"),
    ("/v1/trajectories/run1/t_0/%EF%BC%8E%EF%BC%8E", 422, "path.file:"),
])
def test_read_routes_refuse_ids_outside_the_run(open_producer: httpx.Client, store_dir: Path, path: str, status: int,
                                                error: str | None) -> None:
    (store_dir.parent / "secret.txt").write_text("outside the store")
    response = open_producer.get(path)
    assert response.status_code == status, (path, response.status_code, response.text)
    assert b"outside the store" not in response.content
    if error is None:
        assert response.json() == {"detail": "Not Found"}, response.text  # no route matched
    else:
        assert response.json()["error"].startswith(error), response.text


def test_trajectory_files_are_served_for_valid_names(open_producer: httpx.Client, store_dir: Path) -> None:
    LocalDirStore(store_dir).put("run1/t_0/step_0000.json", b"{}")
    assert open_producer.get("/v1/trajectories/run1/t_0/step_0000.json").content == b"{}"
    assert open_producer.get("/v1/trajectories/run1/t_0").json()["files"] == ["step_0000.json"]
    response = open_producer.get("/v1/trajectories/run1/t_0/..step")  # leading dot: refused by the pattern
    assert response.status_code == 422
