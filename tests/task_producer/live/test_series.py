"""The last hour's series in Redis (one writer per interval across producer replicas) and the Prometheus
source's failure."""

from __future__ import annotations

import redis

from common import keys
from common.polling import free_port
from services.task_producer.live.series import FIELDS, WINDOW_S, RedisSeries, prometheus_series


def test_one_point_per_interval_whatever_the_replicas_and_only_the_last_hour(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    first, second = RedisSeries(client, interval_s=10), RedisSeries(client, interval_s=10)
    point = dict.fromkeys(FIELDS, 1.0)
    assert first.append(point, now_s=1000.0) and not second.append(point, now_s=1000.5)  # the other replica's turn
    client.delete(keys.DASHBOARD_SERIES_LOCK)  # the interval passed
    assert second.append({**point, "queue_depth": 7.0})
    series = first.read()
    assert series.source == "redis" and series.values["queue_depth"] == [7.0]  # the 1000 s point is older than an hour
    assert first.points == WINDOW_S // 10 + 1


def test_an_unreachable_prometheus_gives_an_empty_series_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    series = prometheus_series(url, timeout_s=1.0)
    assert series.source == "prometheus" and series.t == [] and series.error is not None and url in series.error
