"""The dashboard's one reader of Redis: a background thread samples, every `PRODUCER_LIVE_INTERVAL_S`, the
queues, the env pool, the newest runs and the gateway's replicas, and publishes an immutable `Snapshot`; every
browser (server-sent events or `ETag` polls) is served from it. So Redis sees the same reads per second whatever
the number of open dashboards: per tick the pool's 3 reads, the queues' counters (one pipeline, `queues.py`),
one ZREVRANGE of the runs and the summary reads of the runs still running (finished runs are read once), plus
the detail of each run a page is watching (one `summarize_run` per run, whatever the number of pages). The
series point (`series.py`) is written and read once per `PRODUCER_SERIES_INTERVAL_S`.

The wall's steps come from the event stream, which the sinks empty as they persist (XACK + XDEL, see
`services/storage_sink/stream_group.py`): a second thread follows every shard with one blocking XREAD at a
time (`BLOCK` `STREAM_BLOCK_MS`), served by Redis the moment an entry is added, before a sink deletes it. Its
reads follow the step rate (one per batch of new entries, at most one a second when idle), not the browsers.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import Any

import httpx
import redis
from pydantic import BaseModel

from common.envpool import EnvPool
from common.eventshards import EventShardSettings
from common.keys import events_stream
from common.runstate import RunSummary, list_run_ids, summarize_run
from services.task_producer.live.queues import queue_counts
from services.task_producer.live.rundetail import RunDetail, run_detail
from services.task_producer.live.series import RedisSeries, Series, prometheus_series
from services.task_producer.live.tracker import LiveStep, StepTracker
from services.task_producer.settings import ProducerSettings

log = logging.getLogger(__name__)

#: Stream entries read per tick at most (all shards together); the backlog is read over the next ticks.
READ_COUNT = 500
#: Entries read back per shard when the sampler starts (the running rollouts' latest steps).
BOOTSTRAP_COUNT = 500
#: How long one read of the event stream waits for a new entry (ms).
STREAM_BLOCK_MS = 1000
#: Seconds a run's detail keeps being refreshed after a page last asked for it.
WATCH_S = 30.0
#: Rollouts of the `live` map: updated in the last `LIVE_S` seconds, the newest `LIVE_MAX`.
LIVE_S, LIVE_MAX = 600.0, 500


class WallTile(BaseModel):
    """One leased env of the wall: its id and URL, the rollout holding its lease (`rollout_id`, None when the
    lease belongs to no rollout, e.g. a health probe) and that rollout's latest step (None before one)."""

    env_id: str
    url: str
    rollout_id: str | None
    live: LiveStep | None


class Snapshot(BaseModel):
    """What every dashboard page shows, as of epoch second `t`. `version` changes exactly when the content
    does (pages and `ETag`s compare it); `error` names the Redis error of the last tick (the rest is then
    the previous tick's). `steps_per_s`: steps per second over the last 30 s (event stream)."""

    version: str
    t: float
    interval_s: float
    queues: list[dict[str, Any]]
    envs: dict[str, int]
    replicas: list[dict[str, Any]]
    replicas_error: str | None
    runs: list[RunSummary]
    wall: list[WallTile]
    live: dict[str, LiveStep]
    steps_per_s: float
    error: str | None = None


def fetch_replicas(settings: ProducerSettings) -> tuple[list[dict[str, Any]], str | None]:
    """The gateway's replicas (`GET /admin/replicas`) and None, or [] and the reason they cannot be shown."""
    if not settings.gateway_url:
        return [], "no gateway configured (PRODUCER_GATEWAY_URL)"
    try:
        token = settings.gateway_admin_token
        headers = {"Authorization": f"Bearer {token.get_secret_value()}"} if token else {}
        response = httpx.get(f"{settings.gateway_url.rstrip('/')}/admin/replicas", headers=headers, timeout=2.0)
        response.raise_for_status()
        return list(response.json().get("replicas", [])), None
    except (httpx.HTTPError, ValueError) as exc:
        return [], f"gateway {settings.gateway_url}: {exc}"


class LiveSampler:
    """Samples Redis for the dashboard in one daemon thread (`start`/`stop`); see the module docstring."""

    def __init__(self, client: redis.Redis, settings: ProducerSettings) -> None:
        self.client = client
        self.settings = settings
        self.interval_s = settings.live_interval_s
        self.tracker = StepTracker()
        self.streams = [events_stream(s) for s in range(EventShardSettings().event_shards)]
        self._cursors: dict[str, str] | None = None
        self._series_store = RedisSeries(client, settings.series_interval_s)
        self._series_due = 0.0
        self.series = Series(source="redis", t=[], values={})
        self.series_version = ""
        self.snapshot: Snapshot | None = None
        self._finished: dict[str, RunSummary] = {}
        self._details: dict[str, RunDetail] = {}
        self._detail_versions: dict[str, str] = {}
        self._watched: dict[str, float] = {}
        self._detail_lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.ticks = 0

    def start(self) -> None:
        """Start sampling (the first tick at once) and following the event stream."""
        self._stop.clear()
        self._threads = [threading.Thread(target=self._run, name="dashboard-sampler", daemon=True),
                         threading.Thread(target=self._follow, name="dashboard-stream", daemon=True)]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stop sampling and wait for the threads."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                entries = self._read_stream(STREAM_BLOCK_MS)
            except (redis.RedisError, OSError) as exc:
                log.warning("dashboard stream reader: %s", exc)
                self._stop.wait(self.interval_s)
                continue
            self.tracker.feed(entries)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.tick()
            except (redis.RedisError, OSError) as exc:
                log.warning("dashboard sampler: %s", exc)
                if self.snapshot is not None:
                    self.snapshot = self.snapshot.model_copy(update={"error": f"Redis: {exc}", "t": time.time()})
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    # -- one tick -------------------------------------------------------------------------------------------
    def tick(self) -> None:
        """One round of reads; publishes a new `Snapshot` (and the series when due)."""
        now = time.time()
        pool = EnvPool(self.client).status()
        queues = queue_counts(self.client)
        runs = self._runs()
        replicas, replicas_error = fetch_replicas(self.settings)
        steps_per_s, rollouts = self.tracker.view(now)
        wall = []
        for env in pool.envs:
            if env["state"] != "leased":
                continue
            rollout_id = (env["leased_by"] or "").split("#", 1)[0] or None
            wall.append(WallTile(env_id=env["env_id"], url=env["url"], rollout_id=rollout_id,
                                 live=rollouts.get(rollout_id or "")))
        recent = sorted((s for s in rollouts.values() if s.updated >= now - LIVE_S),
                        key=lambda s: s.updated, reverse=True)[:LIVE_MAX]
        in_flight = float(sum(int(r.get("in_flight", 0) or 0) for r in replicas))
        self._sample_series(now, {"queue_depth": float(sum(q["depth"] for q in queues)),
                                  "envs_leased": float(pool.leased), "envs_idle": float(pool.idle),
                                  "in_flight": in_flight, "steps_per_s": round(steps_per_s, 3)})
        self._refresh_details(now)
        draft = Snapshot(version="", t=now, interval_s=self.interval_s, queues=queues,
                         envs={"total": pool.total, "leased": pool.leased, "idle": pool.idle,
                               "unhealthy": pool.unhealthy},
                         replicas=replicas, replicas_error=replicas_error, runs=runs, wall=wall,
                         live={s.trajectory: s for s in recent}, steps_per_s=round(steps_per_s, 3))
        digest = hashlib.sha256(draft.model_dump_json(exclude={"t", "version"}).encode()).hexdigest()[:16]
        self.snapshot = draft.model_copy(update={"version": digest})
        self.ticks += 1

    def _read_stream(self, block_ms: int | None = None) -> list[tuple[str, dict[bytes, bytes]]]:
        """New entries of every event shard since the last read, waiting up to `block_ms` for one (the newest
        `BOOTSTRAP_COUNT` of each at the first read)."""
        out: list[tuple[str, dict[bytes, bytes]]] = []
        if self._cursors is None:
            self._cursors = {}
            for stream in self.streams:
                entries: Any = self.client.xrevrange(stream, count=BOOTSTRAP_COUNT)
                self._cursors[stream] = _text(entries[0][0]) if entries else "0-0"
                out.extend((_text(i), f) for i, f in reversed(entries))
            return out
        reply: Any = self.client.xread(dict(self._cursors), count=READ_COUNT, block=block_ms)  # type: ignore[arg-type]
        for stream, entries in reply or []:
            if entries:
                self._cursors[_text(stream)] = _text(entries[-1][0])
                out.extend((_text(i), f) for i, f in entries)
        return out

    def _runs(self) -> list[RunSummary]:
        """The newest `PRODUCER_LIVE_RUNS` runs; a finished run's summary is read once."""
        summaries = []
        ids = list_run_ids(self.client, self.settings.live_runs)
        for run_id in ids:
            summary = self._finished.get(run_id) or summarize_run(self.client, run_id)
            if summary is None:
                continue
            if summary.finished:
                self._finished[run_id] = summary
            summaries.append(summary)
        for run_id in set(self._finished) - set(ids):
            del self._finished[run_id]
        return summaries

    def _sample_series(self, now: float, point: dict[str, float]) -> None:
        if now < self._series_due:
            return
        self._series_due = now + self.settings.series_interval_s
        self._series_store.append(point, now)
        if self.settings.prometheus_url:
            series = prometheus_series(self.settings.prometheus_url, now)
        else:
            series = self._series_store.read(now)
        self.series = series
        self.series_version = hashlib.sha256(series.model_dump_json().encode()).hexdigest()[:16]

    # -- run details ----------------------------------------------------------------------------------------
    def knows(self, trajectory: str) -> bool:
        """Whether the event stream showed a rollout of `trajectory` (`{run_id}/{task_id}_{index}`)."""
        return any(live.trajectory == trajectory for live in self.tracker.view(time.time())[1].values())

    def watch(self, run_id: str) -> None:
        """A page shows `run_id`: keep its detail refreshed for `WATCH_S` seconds more."""
        self._watched[run_id] = time.monotonic()

    def detail(self, run_id: str) -> RunDetail | None:
        """The detail of `run_id` for a page (refreshed each tick while pages ask for it within `WATCH_S`);
        read at once, by one caller, when no tick has read it yet. None when the run is unknown."""
        self._watched[run_id] = time.monotonic()
        cached = self._details.get(run_id)
        if cached is not None:
            return cached
        with self._detail_lock:
            if run_id not in self._details:
                detail = run_detail(self.client, run_id)
                if detail is None:
                    return None
                self._keep_detail(run_id, detail)
            return self._details[run_id]

    def _keep_detail(self, run_id: str, detail: RunDetail) -> None:
        self._detail_versions[run_id] = hashlib.sha256(detail.model_dump_json().encode()).hexdigest()[:16]
        self._details[run_id] = detail

    def _refresh_details(self, now: float) -> None:
        del now
        horizon = time.monotonic() - WATCH_S
        for run_id, seen in list(self._watched.items()):
            if seen < horizon:
                del self._watched[run_id]
                self._details.pop(run_id, None)
                self._detail_versions.pop(run_id, None)
                continue
            cached = self._details.get(run_id)
            if cached is not None and cached.summary.finished:
                continue  # a finished run does not change
            detail = run_detail(self.client, run_id)
            with self._detail_lock:
                if detail is None:
                    self._details.pop(run_id, None)
                    self._detail_versions.pop(run_id, None)
                else:
                    self._keep_detail(run_id, detail)

    def detail_version(self, run_id: str) -> str:
        """A digest of the cached detail of `run_id` ("" when none): changes exactly when it does."""
        return self._detail_versions.get(run_id, "")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
