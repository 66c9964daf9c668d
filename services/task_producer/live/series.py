"""The dashboard's last hour of pool figures: queue depth, envs leased / idle, the model replicas' in-flight
requests and the step rate, as a bounded series in Redis (`keys.DASHBOARD_SERIES`, one point per
`interval_s`, `POINTS` kept), or read from Prometheus when `PRODUCER_PROMETHEUS_URL` is set.

Prometheus queries (HTTP API `GET /api/v1/query_range`, https://prometheus.io/docs/prometheus/latest/querying/api/):
`SERIES_QUERIES` below, over the metrics the producer (`cua_queue_jobs`, `cua_envs`), the gateway
(`gateway_replica_in_flight`) and the runners (`cua_runner_steps_total`) export.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import redis
from pydantic import BaseModel

from common import keys

#: Figures of each point, in the order the dashboard draws them.
FIELDS = ("queue_depth", "envs_leased", "envs_idle", "in_flight", "steps_per_s")
#: PromQL of each figure.
SERIES_QUERIES = {
    "queue_depth": 'sum(cua_queue_jobs{state="waiting"})',
    "envs_leased": 'sum(cua_envs{state="leased"})',
    "envs_idle": 'sum(cua_envs{state="idle"})',
    "in_flight": "sum(gateway_replica_in_flight)",
    "steps_per_s": "sum(rate(cua_runner_steps_total[1m]))",
}
#: The window the dashboard shows (s).
WINDOW_S = 3600


class Series(BaseModel):
    """Points of the last hour: `t` epoch seconds, and per figure of `FIELDS` its values (None where a
    source had none); `source` is `redis` or `prometheus`; `error` says why a source could not be read."""

    source: str
    t: list[float]
    values: dict[str, list[float | None]]
    error: str | None = None


class RedisSeries:
    """The series in Redis: `append` adds a point unless another producer replica added one in the last
    `interval_s` (`keys.DASHBOARD_SERIES_LOCK`); `read` returns the last hour."""

    def __init__(self, client: redis.Redis, interval_s: float) -> None:
        self.client = client
        self.interval_s = interval_s
        self.points = int(WINDOW_S / interval_s) + 1

    def append(self, point: dict[str, float], now_s: float | None = None) -> bool:
        """Add `point` (figures of `FIELDS`) at `now_s`; False when another replica holds this interval."""
        lock_ms = max(1, int(self.interval_s * 1000) - 50)
        if not self.client.set(keys.DASHBOARD_SERIES_LOCK, "1", nx=True, px=lock_ms):
            return False
        fields = {"t": f"{now_s if now_s is not None else time.time():.3f}", "p": json.dumps(point)}
        self.client.xadd(keys.DASHBOARD_SERIES, fields, maxlen=self.points, approximate=True)  # type: ignore[arg-type]
        return True

    def read(self, now_s: float | None = None) -> Series:
        """Points of the last `WINDOW_S` seconds, oldest first (one XRANGE)."""
        since = (now_s if now_s is not None else time.time()) - WINDOW_S
        entries: Any = self.client.xrange(keys.DASHBOARD_SERIES, min=f"{int(since * 1000)}-0", max="+")
        t: list[float] = []
        values: dict[str, list[float | None]] = {name: [] for name in FIELDS}
        for _, fields in entries:
            stamp = float(fields[b"t"])  # the writer's clock (entry ids are Redis's)
            if stamp < since:
                continue
            point = json.loads(fields[b"p"])
            t.append(stamp)
            for name in FIELDS:
                values[name].append(point.get(name))
        return Series(source="redis", t=t, values=values)


def prometheus_series(base_url: str, now_s: float | None = None, step_s: float = 15.0,
                      timeout_s: float = 5.0) -> Series:
    """The same figures from Prometheus (`query_range` of each of `SERIES_QUERIES` over the last hour at
    `step_s`), aligned on one time axis. Never raises: an unreachable Prometheus or a failed query gives an
    empty series whose `error` names it."""
    end = now_s if now_s is not None else time.time()
    start = end - WINDOW_S
    by_time: dict[float, dict[str, float]] = {}
    try:
        with httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s) as http:
            for name, query in SERIES_QUERIES.items():
                response = http.get("/api/v1/query_range",
                                    params={"query": query, "start": start, "end": end, "step": step_s})
                response.raise_for_status()
                body = response.json()
                if body.get("status") != "success":
                    raise ValueError(f"query {query!r}: {body.get('error', body)}")
                for result in body["data"]["result"]:
                    for stamp, value in result["values"]:
                        by_time.setdefault(float(stamp), {})[name] = float(value)
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        return Series(source="prometheus", t=[], values={name: [] for name in FIELDS},
                      error=f"Prometheus {base_url}: {exc}")
    times = sorted(by_time)
    return Series(source="prometheus", t=times,
                  values={name: [by_time[t].get(name) for t in times] for name in FIELDS})
