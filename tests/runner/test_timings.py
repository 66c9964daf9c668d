"""`AttemptTimings`: steps add up, `as_dict` gives every `TIMING_KEYS` name, `startup_ms` once a model was called."""

from __future__ import annotations

import pytest

from common.events import StepTimings
from services.runner.timings import TIMING_KEYS, AttemptTimings


def test_steps_add_up_and_publishing_counts_only_in_the_loop_times() -> None:
    timings = AttemptTimings(picked_at=100.0, lease_wait_ms=1.0, held_ms=2.0)
    for _ in range(3):
        step = StepTimings(model_ms=100.0, env_ms=30.0, action_ms=20.0, screenshot_ms=10.0, settle_ms=5.0,
                           step_ms=140.0)
        timings.add_step(step, publish_ms=2.0, loop_ms=142.0)
    out = timings.as_dict()
    assert (out["model_ms"], out["env_ms"], out["action_ms"], out["screenshot_ms"]) == (300.0, 90.0, 60.0, 30.0)
    assert (out["settle_ms"], out["publish_ms"], out["steps_ms"]) == (15.0, 6.0, 426.0)


def test_an_attempt_records_only_the_timings_that_happened() -> None:
    timings = AttemptTimings(picked_at=100.0, job_start_ms=12.5)
    assert timings.as_dict() == {"job_start_ms": 12.5}  # cancelled before start
    timings.lease_wait_ms = 40.0
    assert timings.as_dict() == {"job_start_ms": 12.5, "lease_wait_ms": 40.0}  # no env to lease: no held env
    timings.held_ms = 900.0
    assert set(timings.as_dict()) == set(TIMING_KEYS) - {"startup_ms"}


def test_startup_is_there_only_once_a_model_request_was_sent() -> None:
    timings = AttemptTimings(picked_at=100.0, job_start_ms=12.5, lease_wait_ms=1.0, held_ms=2.0)
    assert set(timings.as_dict()) == set(TIMING_KEYS) - {"startup_ms"}
    timings.first_model_at = 100.25
    out = timings.as_dict()
    assert set(out) == set(TIMING_KEYS)
    assert out["startup_ms"] == pytest.approx(250.0) and out["job_start_ms"] == 12.5
