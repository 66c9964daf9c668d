"""The runner's Prometheus metrics, counted in work-horses and summed over them by the worker's
metrics port (`RUNNER_METRICS_PORT`; multiprocess mode, see `prometheus_multiprocess.py`).

- `cua_runner_steps_total`: steps taken;
- `cua_runner_rollouts_total{status}`: rollout attempts by final status;
- `cua_runner_step_seconds{part}`: per step, `model` (waiting on the gateway), `action` (`/execute`),
  `screenshot` (`/screenshot` when not settling), `env` (action + screenshot), `settle` (waiting for
  the screen to settle), `overhead` (the rest: the runner's own work, publishing included) and `total`;
- `cua_runner_episode_seconds{phase}`: per attempt, `setup`, `evaluation` and `total`;
- `cua_runner_startup_seconds`: per attempt, job picked by the worker -> first model request
  (`startup_ms`, see `services.runner.timings.TIMING_KEYS`); `cua_runner_job_start_seconds`: job
  picked -> attempt started in the work-horse;
- `cua_runner_env_seconds_total{state}`: env time held by this runner's attempts, by what the env
  did: `in_step`, `startup` (lease held, neither stepping, resetting nor evaluating), `reset`
  (reset on lease and release), `evaluation`. Env utilisation = rate / number of envs; the rest of
  the envs' time is idle;
- `cua_runner_lease_wait_seconds`: time to lease an env.
"""

from __future__ import annotations

import os

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, multiprocess

from common.envtime import env_split
from common.events import StepTimings
from services.runner.prometheus_multiprocess import MULTIPROC_ENV

_STEP_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
                 30, 60)
_EPISODE_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
_STARTUP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600)

STEPS = Counter("cua_runner_steps_total", "Steps taken by the runner's episodes")
ROLLOUTS = Counter("cua_runner_rollouts_total", "Rollout attempts by final status", ["status"])
STEP_SECONDS = Histogram("cua_runner_step_seconds", "Step time by part (s)", ["part"], buckets=_STEP_BUCKETS)
EPISODE_SECONDS = Histogram("cua_runner_episode_seconds", "Attempt time by phase (s)", ["phase"],
                            buckets=_EPISODE_BUCKETS)
STARTUP_SECONDS = Histogram("cua_runner_startup_seconds", "Job picked -> first model request (s)",
                            buckets=_STARTUP_BUCKETS)
JOB_START_SECONDS = Histogram("cua_runner_job_start_seconds", "Job picked -> attempt started in the work-horse (s)",
                              buckets=_STARTUP_BUCKETS)
ENV_SECONDS = Counter("cua_runner_env_seconds_total", "Env time held by attempts, by what the env did (s)",
                      ["state"])
LEASE_WAIT_SECONDS = Histogram("cua_runner_lease_wait_seconds", "Time to lease an env (s)", buckets=_STEP_BUCKETS)

def observe_step(step: StepTimings, total_ms: float) -> None:
    """Count one step and its time split (ms in, seconds out): the parts of `step`, the whole step
    `total_ms` (its event's publishing included) and the runner's own overhead, the rest (>= 0)."""
    STEPS.inc()
    parts = step.model_ms + step.action_ms + step.screenshot_ms + step.settle_ms
    values = {"model": step.model_ms, "action": step.action_ms, "screenshot": step.screenshot_ms,
              "env": step.env_ms, "settle": step.settle_ms, "overhead": max(0.0, total_ms - parts),
              "total": total_ms}
    for part, ms in values.items():
        STEP_SECONDS.labels(part).observe(ms / 1000.0)


def observe_attempt(status: str, timings: dict[str, float]) -> None:
    """Count one finished attempt by status, its phases (`setup_ms`, `eval_ms`, `total_ms`), start-up
    (`startup_ms`, `job_start_ms`) and env time by state (`common.envtime.env_split`); missing keys are skipped."""
    ROLLOUTS.labels(status).inc()
    for phase, key in (("setup", "setup_ms"), ("evaluation", "eval_ms"), ("total", "total_ms")):
        if key in timings:
            EPISODE_SECONDS.labels(phase).observe(timings[key] / 1000.0)
    for histogram, key in ((STARTUP_SECONDS, "startup_ms"), (JOB_START_SECONDS, "job_start_ms")):
        if key in timings:
            histogram.observe(timings[key] / 1000.0)
    for state, ms in env_split(timings).items():
        ENV_SECONDS.labels(state).inc(ms / 1000.0)


def metrics_registry() -> CollectorRegistry:
    """What the metrics port serves: the sum over work-horses in multiprocess mode, else this
    process's own registry."""
    if not os.environ.get(MULTIPROC_ENV):
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry
