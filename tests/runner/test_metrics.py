"""The runner's Prometheus metrics: step time split into model / action / screenshot / settle /
overhead, start-up, and env time by what the env did (in-process registry, no services); work-horses'
metric files (multiprocess mode, real forks)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from common.events import StepTimings
from services.runner.metrics import observe_attempt, observe_step

ROOT = Path(__file__).resolve().parents[2]


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_step_is_split_into_its_parts_and_the_runners_own_overhead() -> None:
    before = {part: _value("cua_runner_step_seconds_sum", part=part)
              for part in ("model", "action", "screenshot", "env", "settle", "overhead", "total")}
    steps = _value("cua_runner_steps_total")
    observe_step(StepTimings(model_ms=40.0, env_ms=15.0, action_ms=10.0, screenshot_ms=5.0, settle_ms=20.0),
                 total_ms=78.0)
    added = {part: _value("cua_runner_step_seconds_sum", part=part) - value for part, value in before.items()}
    assert added == {"model": pytest.approx(0.040), "action": pytest.approx(0.010),
                     "screenshot": pytest.approx(0.005), "env": pytest.approx(0.015),
                     "settle": pytest.approx(0.020), "overhead": pytest.approx(0.003), "total": pytest.approx(0.078)}
    assert _value("cua_runner_steps_total") == steps + 1
    # a 3 ms overhead lands in a fine bucket (the target is <= 5 ms per step)
    assert _value("cua_runner_step_seconds_bucket", part="overhead", le="0.003") >= 1


def test_an_attempt_counts_its_start_up_and_env_time_by_state() -> None:
    states = ("in_step", "startup", "reset", "evaluation")
    before = {s: _value("cua_runner_env_seconds_total", state=s) for s in states}
    startups = _value("cua_runner_startup_seconds_count")
    observe_attempt("completed", {"held_ms": 2000.0, "steps_ms": 1500.0, "reset_ms": 200.0, "release_ms": 100.0,
                                  "eval_ms": 100.0, "startup_ms": 40.0, "job_start_ms": 10.0, "total_ms": 1800.0})
    added = {s: _value("cua_runner_env_seconds_total", state=s) - before[s] for s in states}
    assert added == {"in_step": pytest.approx(1.5), "startup": pytest.approx(0.1), "reset": pytest.approx(0.3),
                     "evaluation": pytest.approx(0.1)}
    assert _value("cua_runner_startup_seconds_count") == startups + 1
    no_env = {s: _value("cua_runner_env_seconds_total", state=s) for s in states}
    observe_attempt("env_init_failed", {"lease_wait_ms": 30_000.0})  # no env held: no env time
    assert {s: _value("cua_runner_env_seconds_total", state=s) for s in states} == no_env


_HORSES_SCRIPT = """
import os, sys
from services.runner.prometheus_multiprocess import mark_worker, use_multiprocess_metrics
directory = use_multiprocess_metrics()
from common.events import StepTimings
from services.runner.metrics import STEPS, metrics_registry, observe_step
mark_worker()
for _ in range(6):  # six rollouts, one work-horse each, one after the other (as RQ's forking worker runs them)
    pid = os.fork()
    if pid == 0:
        for _ in range(3):
            observe_step(StepTimings(model_ms=1.0, env_ms=2.0, action_ms=1.0, screenshot_ms=1.0), total_ms=4.0)
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0
STEPS.inc()  # the worker itself counts too
print(sorted(p.name for p in directory.glob("*.db")))
print(metrics_registry().get_sample_value("cua_runner_steps_total"),
      metrics_registry().get_sample_value("cua_runner_step_seconds_count", {"part": "total"}))
"""


def test_work_horses_of_a_worker_share_one_set_of_metric_files(tmp_path: Path) -> None:
    """Real forks in a fresh interpreter (multiprocess mode is fixed when prometheus_client is imported): the
    horses' counts add up in one file per metric type, not a new file per rollout (which grew the directory and
    every scrape by a file per rollout)."""
    done = subprocess.run([sys.executable, "-c", _HORSES_SCRIPT], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    files, totals = done.stdout.splitlines()
    worker = re.search(r"counter_(\d+)\.db", files)
    assert worker, files
    pid = worker.group(1)
    # the worker's own files (its unlabelled metrics exist from import on) and one set for all its horses
    assert eval(files) == [f"counter_{pid}.db", f"counter_{pid}h.db", f"histogram_{pid}.db",  # noqa: S307
                           f"histogram_{pid}h.db"]
    assert totals.split() == ["19.0", "18.0"]  # 6 rollouts x 3 steps + 1 in the worker; 18 step histograms
