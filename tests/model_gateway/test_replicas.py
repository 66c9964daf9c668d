"""Replica state (`services/model_gateway/replicas.py`): the circuit breaker."""

from __future__ import annotations

from services.model_gateway.replicas import BreakerState, ReplicaPool


def test_breaker_half_open() -> None:
    pool = ReplicaPool.of(["http://a:1"], unhealthy_after=2, cooldown_s=3600)
    replica = pool.list_replicas()[0]
    pool.record_failure(replica)
    assert replica.breaker == BreakerState.CLOSED
    pool.record_failure(replica)
    assert replica.breaker == BreakerState.OPEN and not replica.routable
    pool.record_success(replica, probe=True)  # within the cooldown: stays open
    assert replica.breaker == BreakerState.OPEN
    pool.cooldown_s = 0.0
    pool.record_success(replica, probe=True)
    assert replica.breaker == BreakerState.HALF_OPEN and replica.routable
    replica.in_flight = 1  # one trial at a time
    assert not replica.routable
    replica.in_flight = 0
    pool.record_failure(replica)  # the trial failed: open again at once
    assert replica.breaker == BreakerState.OPEN
    pool.record_success(replica, probe=True)
    pool.record_success(replica)  # a successful trial request closes it
    assert replica.breaker == BreakerState.CLOSED
