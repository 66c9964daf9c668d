"""The dashboard's Redis cost does not grow with its browsers: one sampler reads Redis each tick, and any
number of server-sent-event clients and `ETag` pollers are served from its snapshot. Counted by the server
(`INFO commandstats`) on a real redis-server, with the producer served over real HTTP; the wall joins each
leased env to its rollout's latest step on the event stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from common import keys
from common.blob_keys import blob_key
from common.envpool import EnvPool
from common.objectstore import LocalDirStore
from common.polling import wait_until
from common.runstate import RolloutRecord, RunMeta, record_rollout, save_run_meta
from common.status import RolloutStatus
from services.task_producer.api import create_app
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app
from tests.task_producer.live.helpers import screenshot, step_entry

TOKEN = "dashboard-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
INTERVAL_S = 0.25


def _calls(client: redis.Redis) -> int:
    """Commands the server ran so far, but INFO itself."""
    stats: dict[str, dict[str, Any]] = client.info("commandstats")  # type: ignore[assignment]
    return sum(int(v["calls"]) for name, v in stats.items() if name not in ("cmdstat_info",))


def seed(client: redis.Redis, store: LocalDirStore) -> None:
    """Three envs, two leased by running rollouts of run `live` whose steps are on the event stream (their
    screenshots in the store), and the run's meta and records."""
    save_run_meta(client, RunMeta(run_id="live", created_at=time.time(), total_rollouts=3, queue="cua-default",
                                  priority="default", rollouts_per_task=3, max_steps=5, model="m", task_ids=["t"]))
    pool = EnvPool(client)
    for port in (5001, 5002, 5003):
        pool.register(f"http://127.0.0.1:{port}", "static")
    png = screenshot(1280, 720)
    store.put(blob_key(png), png)
    for index in (0, 1):
        assert pool.try_lease(f"live:t:{index}#1", 60_000) is not None
        record_rollout(client, RolloutRecord(rollout_id=f"live:t:{index}", run_id="live", task_id="t",
                                             rollout_index=index, status=RolloutStatus.RUNNING))
        for step in range(3):
            client.xadd(keys.EVENTS_STREAM, step_entry("live", "t", index, step, png, x=100 * step, y=50))  # type: ignore[arg-type]
    record_rollout(client, RolloutRecord(rollout_id="live:t:2", run_id="live", task_id="t", rollout_index=2,
                                         status=RolloutStatus.COMPLETED, reward=1.0, ended_at=time.time()))


@pytest.fixture
def producer(redis_url: str, tmp_path: Path) -> Iterator[tuple[str, Any, redis.Redis]]:
    client = redis.Redis.from_url(redis_url)
    seed(client, LocalDirStore(tmp_path / "store"))
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store", api_token=TOKEN,
                                live_interval_s=INTERVAL_S)
    app = create_app(settings)
    with serve_app(app) as url:
        wait_until(lambda: app.state.sampler.snapshot is not None
                   and all(t.live for t in app.state.sampler.snapshot.wall), 10, "the sampler's first ticks")
        yield url, app, client


def _sse_client(url: str, stop: threading.Event, got: list[str]) -> None:
    try:
        with httpx.Client(headers=AUTH, timeout=httpx.Timeout(10, read=60)) as http, \
                http.stream("GET", url) as response:
            for line in response.iter_lines():
                if line.startswith("event: "):
                    got.append(line.removeprefix("event: "))
                if stop.is_set():
                    return
    except httpx.HTTPError:
        if not stop.is_set():
            raise  # the server closing the stream at the test's end is expected; earlier, not


def _poller(url: str, stop: threading.Event, statuses: list[int]) -> None:
    etag = ""
    with httpx.Client(headers=AUTH, timeout=10) as http:
        while not stop.is_set():
            response = http.get(url, headers={"If-None-Match": etag})
            statuses.append(response.status_code)
            etag = response.headers.get("ETag", etag)
            stop.wait(0.05)


def _per_tick(app: Any, client: redis.Redis, ticks: int = 12) -> float:
    """Redis commands per sampler tick over the next `ticks` ticks."""
    sampler = app.state.sampler
    start_ticks, start_calls = sampler.ticks, _calls(client)
    wait_until(lambda: sampler.ticks >= start_ticks + ticks, 30, f"{ticks} sampler ticks")
    return (_calls(client) - start_calls) / (sampler.ticks - start_ticks)


def test_redis_reads_per_tick_are_the_same_with_one_browser_and_with_sixteen(
        producer: tuple[str, Any, redis.Redis]) -> None:
    url, app, client = producer
    stop = threading.Event()
    events: list[list[str]] = [[] for _ in range(16)]
    statuses: list[list[int]] = [[] for _ in range(8)]
    threads = [threading.Thread(target=_sse_client, args=(f"{url}/v1/dashboard/stream?run_id=live", stop, events[0]),
                                daemon=True)]
    threads[0].start()
    wait_until(lambda: "run" in events[0] and "snapshot" in events[0], 10, "the first browser's events")
    one = _per_tick(app, client)
    for i in range(1, 16):
        path = "/v1/dashboard/stream" + ("?run_id=live" if i % 2 else "")
        threads.append(threading.Thread(target=_sse_client, args=(url + path, stop, events[i]), daemon=True))
    for i in range(8):
        threads.append(threading.Thread(target=_poller, args=(f"{url}/v1/dashboard/snapshot", stop, statuses[i]),
                                        daemon=True))
    for thread in threads[1:]:
        thread.start()
    wait_until(lambda: all("snapshot" in e for e in events) and all(s for s in statuses), 20, "every browser served")
    many = _per_tick(app, client)
    stop.set()
    print(f"Redis commands per sampler tick ({INTERVAL_S} s): 1 browser {one:.1f}, 16 SSE + 8 pollers {many:.1f}")
    assert many <= one * 1.15 + 1, (one, many)
    assert one < 60, one  # this seed: ~3 envs, 3 queues, 1 running run watched
    assert any(304 in s for s in statuses)  # pollers that found nothing new got a 304, not the snapshot again


def test_the_wall_shows_each_leased_env_with_its_rollouts_latest_step_and_thumbnail(
        producer: tuple[str, Any, redis.Redis]) -> None:
    url, app, client = producer
    # a step the sink persists and deletes at once (XACK + XDEL) still reaches the wall
    png = screenshot(640, 360, shade=90)
    entry_id = client.xadd(keys.EVENTS_STREAM, step_entry("live", "t", 1, 3, png, inline=True, x=7, y=8))  # type: ignore[arg-type]
    client.xdel(keys.EVENTS_STREAM, entry_id)
    wait_until(lambda: getattr(app.state.sampler.tracker.latest("live:t:1"), "step", None) == 3, 10,
               "the wall to see the deleted step")
    wait_until(lambda: any(t.live and t.live.step == 3 for t in app.state.sampler.snapshot.wall), 10, "a tick")
    with httpx.Client(base_url=url, headers=AUTH, timeout=10) as http:
        snapshot = http.get("/v1/dashboard/snapshot").json()
        tiles = {t["env_id"]: t for t in snapshot["wall"]}
        assert sorted(tiles) == ["127.0.0.1-5001", "127.0.0.1-5002"]  # the idle env is not on the wall
        live = tiles["127.0.0.1-5001"]["live"]
        assert (live["rollout_id"], live["step"], live["action"]) == ("live:t:0", 2, "click(x=200, y=50)")
        assert live["policy_version"] == "v3" and live["step_ms"] == 1234.0
        assert snapshot["envs"] == {"total": 3, "leased": 2, "idle": 1, "unhealthy": 0}
        assert [r["run_id"] for r in snapshot["runs"]] == ["live"]
        shot = http.get("/v1/dashboard/rollouts/live:t:0/shot")
        assert shot.status_code == 200 and shot.headers["content-type"] == "image/jpeg"
        assert http.get("/v1/dashboard/rollouts/nope/shot").status_code == 404
        inline = http.get("/v1/dashboard/rollouts/live:t:1/shot")  # its PNG rode in the deleted entry
        assert inline.status_code == 200 and inline.content != shot.content
        assert http.get("/v1/dashboard/snapshot", headers={"Authorization": "Bearer wrong"}).status_code == 401
        detail = http.get("/v1/dashboard/runs/live").json()
        assert detail["summary"]["done"] == 1 and detail["curve"]["completed"] == [1]
        assert http.get("/v1/dashboard/runs/nope").status_code == 404
