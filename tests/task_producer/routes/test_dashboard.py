"""The dashboard's JSON routes over real HTTP: a stored trajectory's steps as they arrive and its ZIP archive
(from a real store directory), the series with its ETag, and their refusals."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from common.objectstore import LocalDirStore
from common.polling import wait_until
from services.task_producer.api import create_app
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app
from tests.task_producer.live.helpers import screenshot

TOKEN = "dashboard-routes-token"


@pytest.fixture
def http(redis_url: str, tmp_path: Path) -> Iterator[tuple[httpx.Client, LocalDirStore]]:
    store = LocalDirStore(tmp_path / "store")
    app = create_app(ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store", api_token=TOKEN,
                                      live_interval_s=0.2))
    with serve_app(app) as url, httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"},
                                             timeout=10) as client:
        wait_until(lambda: app.state.sampler.series_version, 10, "the first series sample")
        yield client, store


def _store_step(store: LocalDirStore, step: int) -> None:
    record = {"step": step, "thought": f"step {step}", "usage": {"prompt_tokens": 10, "completion_tokens": 4},
              "logprobs": [-0.5, -1.5], "timings": {"step_ms": 900.0},
              "actions": [{"action_type": "click", "inputs": {"x": 5, "y": 6}, "code": "pyautogui.click(5, 6)"}]}
    store.put(f"run1/task_0/step_{step:04d}.json", json.dumps(record).encode())
    store.put(f"run1/task_0/image_{step:04d}.png", screenshot(32, 18))


def test_a_running_trajectorys_steps_arrive_after_the_last_one_the_page_has(
        http: tuple[httpx.Client, LocalDirStore]) -> None:
    client, store = http
    assert client.get("/v1/dashboard/trajectories/run1/task_0/steps").status_code == 404  # nothing stored yet
    _store_step(store, 0)
    _store_step(store, 1)
    body = client.get("/v1/dashboard/trajectories/run1/task_0/steps", params={"after": 0}).json()
    assert body["manifest"] is None and [s["step"] for s in body["steps"]] == [1]
    step = body["steps"][0]
    assert (step["action_line"], step["mean_logprob"], step["completion_tokens"]) == ("click(x=5, y=6)", -1.0, 4)
    assert step["code"] == "pyautogui.click(5, 6)" and step["image"] == "run1/task_0/image_0001.png"
    store.put("run1/task_0/manifest.json", json.dumps({"status": "completed", "steps": []}).encode())
    assert client.get("/v1/dashboard/trajectories/run1/task_0/steps", params={"after": 1}).json()["manifest"]
    fragment = client.get("/ui/trajectories/run1/task_0/steps", params={"after": 0}).json()
    assert fragment["last"] == 1 and 'id="step-1"' in fragment["html"] and fragment["ended"] is True
    archive = client.get("/v1/dashboard/trajectories/run1/task_0/archive.zip")
    assert archive.headers["content-disposition"] == 'attachment; filename="run1_task_0.zip"'
    names = zipfile.ZipFile(io.BytesIO(archive.content)).namelist()
    assert sorted(names) == ["image_0000.png", "image_0001.png", "manifest.json", "step_0000.json", "step_0001.json"]
    assert client.get("/v1/dashboard/trajectories/run1/nope_0/archive.zip").status_code == 404
    assert client.get("/v1/dashboard/trajectories/run1/task_0/steps", params={"after": -2}).status_code == 422


def test_series_answers_304_while_unchanged_and_every_route_needs_the_token(
        http: tuple[httpx.Client, LocalDirStore]) -> None:
    client, _ = http
    first = client.get("/v1/dashboard/series")
    assert first.status_code == 200 and first.json()["source"] == "redis" and len(first.json()["t"]) == 1
    assert client.get("/v1/dashboard/series", headers={"If-None-Match": first.headers["ETag"]}).status_code == 304
    for path in ("/v1/dashboard/series", "/v1/dashboard/snapshot", "/v1/dashboard/stream",
                 "/v1/dashboard/trajectories/run1/task_0/archive.zip"):
        assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401, path
    assert client.get("/ui/wall", headers={"Authorization": "Bearer wrong"}, follow_redirects=False).status_code == 303
    assert client.get("/ui/static/vendor/uplot/uPlot.iife.min.js").status_code == 200  # no secret in it
