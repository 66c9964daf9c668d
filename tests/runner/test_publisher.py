"""`retry_redis` (services/runner/publisher.py): which errors are retried, for how long, and what is
raised at the end. The calls are plain functions that fail on purpose (the retry policy is the subject;
the publisher against a real Redis is in tests/test_redis_memory.py and the chaos suite)."""

from __future__ import annotations

import logging

import pytest
import redis

from services.runner.publisher import BackpressureTimeout, retry_redis


def test_redis_errors_and_backpressure_are_retried_until_the_call_succeeds(caplog: pytest.LogCaptureFixture) -> None:
    failures: list[Exception] = [redis.ConnectionError("down"), BackpressureTimeout("full")]

    def call() -> str:
        if failures:
            raise failures.pop(0)
        return "recorded"

    with caplog.at_level(logging.WARNING):
        assert retry_redis(call, within_s=10, what="final record", interval_s=0.01) == "recorded"
    assert [r.getMessage() for r in caplog.records] == [
        "final record failed (ConnectionError('down')); retrying",
        "final record failed (BackpressureTimeout('full')); retrying",
    ]


def test_the_last_error_is_raised_once_the_time_is_up() -> None:
    attempts: list[int] = []

    def call() -> None:
        attempts.append(len(attempts))
        raise redis.TimeoutError(f"attempt {len(attempts)}")

    with pytest.raises(redis.TimeoutError) as raised:
        retry_redis(call, within_s=0.2, what="end event", interval_s=0.01)
    assert len(attempts) >= 3 and str(raised.value) == f"attempt {len(attempts)}"
    attempts.clear()
    with pytest.raises(redis.TimeoutError, match="attempt 1"):
        retry_redis(call, within_s=0, what="end event")  # no time: one call
    assert len(attempts) == 1


def test_other_errors_are_bugs_and_raised_at_once() -> None:
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        raise KeyError("rollout_id")

    with pytest.raises(KeyError):
        retry_redis(call, within_s=10, what="final record")
    assert calls == [1]
