"""The runner's Prometheus metrics, counted in work-horses and summed over them by the worker's
metrics port (`RUNNER_METRICS_PORT`; multiprocess mode, see `multiproc.py`).

- `cua_runner_steps_total`: steps taken;
- `cua_runner_rollouts_total{status}`: rollout attempts by final status;
- `cua_runner_step_seconds{part}`: per step, `model` (waiting on the gateway), `env` (action +
  screenshot), `settle` (waiting for the screen to settle), `overhead` (the rest) and `total`;
- `cua_runner_episode_seconds{phase}`: per attempt, `setup`, `evaluation` and `total`;
- `cua_runner_lease_wait_seconds`: time to lease an env.
"""

from __future__ import annotations

import os

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, multiprocess

from common.events import StepTimings
from services.runner.multiproc import MULTIPROC_ENV

_STEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_EPISODE_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)

STEPS = Counter("cua_runner_steps_total", "Steps taken by the runner's episodes")
ROLLOUTS = Counter("cua_runner_rollouts_total", "Rollout attempts by final status", ["status"])
STEP_SECONDS = Histogram("cua_runner_step_seconds", "Step time by part (s)", ["part"], buckets=_STEP_BUCKETS)
EPISODE_SECONDS = Histogram("cua_runner_episode_seconds", "Attempt time by phase (s)", ["phase"],
                            buckets=_EPISODE_BUCKETS)
LEASE_WAIT_SECONDS = Histogram("cua_runner_lease_wait_seconds", "Time to lease an env (s)", buckets=_STEP_BUCKETS)


def observe_step(timings: StepTimings) -> None:
    """Count one step and its time split (ms in, seconds out)."""
    STEPS.inc()
    parts = {"model": timings.model_ms, "env": timings.env_ms, "settle": timings.settle_ms,
             "overhead": max(0.0, timings.step_ms - timings.model_ms - timings.env_ms - timings.settle_ms),
             "total": timings.step_ms}
    for part, ms in parts.items():
        STEP_SECONDS.labels(part).observe(ms / 1000.0)


def observe_attempt(status: str, timings: dict[str, float]) -> None:
    """Count one finished attempt by status and its phases (`setup_ms`, `eval_ms`, `total_ms`)."""
    ROLLOUTS.labels(status).inc()
    for phase, key in (("setup", "setup_ms"), ("evaluation", "eval_ms"), ("total", "total_ms")):
        if key in timings:
            EPISODE_SECONDS.labels(phase).observe(timings[key] / 1000.0)


def metrics_registry() -> CollectorRegistry:
    """What the metrics port serves: the sum over work-horses in multiprocess mode, else this
    process's own registry."""
    if not os.environ.get(MULTIPROC_ENV):
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry
