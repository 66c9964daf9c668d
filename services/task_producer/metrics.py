"""The producer's own Prometheus counters (the pool gauges are in `pool_metrics.py`)."""

from __future__ import annotations

from prometheus_client import Counter

RUNS_SUBMITTED = Counter("cua_producer_runs_submitted_total", "Runs accepted by POST /v1/runs")
ROLLOUTS_ENQUEUED = Counter("cua_producer_rollouts_enqueued_total", "Rollout jobs enqueued")
RUNS_REJECTED = Counter("cua_producer_runs_rejected_total", "Run submissions rejected with 4xx")
