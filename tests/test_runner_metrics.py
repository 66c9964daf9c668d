"""The runner's Prometheus metrics: step time split into model / action / screenshot / settle /
overhead, start-up, and env time by what the env did (in-process registry, no services)."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from services.runner.metrics import StepParts, observe_attempt, observe_step


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_step_is_split_into_its_parts_and_the_runners_own_overhead() -> None:
    before = {part: _value("cua_runner_step_seconds_sum", part=part)
              for part in ("model", "action", "screenshot", "env", "settle", "overhead", "total")}
    steps = _value("cua_runner_steps_total")
    observe_step(StepParts(model_ms=40.0, action_ms=10.0, screenshot_ms=5.0, settle_ms=20.0, total_ms=78.0))
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
