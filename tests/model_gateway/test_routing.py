"""Routing (`services/model_gateway/routing.py`): session keys, sticky pins, bounded loads; the routing
simulation of bench/routing_sim.py."""

from __future__ import annotations

import asyncio
import json
import math

from common.polling import wait_until
from services.model_gateway.replicas import ReplicaPool, replica_id
from services.model_gateway.routing import ConsistentRouter, body_session_key, header_session_key, session_key
from tests.model_gateway.helpers import chat


def test_session_key_precedence_and_cheap_scans() -> None:
    body = json.dumps(chat(user="u-1")).encode()
    reads: list[int] = []

    async def read() -> bytes:
        reads.append(1)
        return body

    assert asyncio.run(session_key({"x-episode-id": "e", "x-session-id": "s"}, read)) == "e"
    assert asyncio.run(session_key({"x-session-id": "s"}, read)) == "s"
    assert not reads  # a session header: the body is not read
    assert asyncio.run(session_key({}, read)) == "u-1" and len(reads) == 1
    assert header_session_key({}) is None
    assert body_session_key(body) == "u-1"
    assert body_session_key(json.dumps(chat()).encode()) is None  # "role": "user" is not a user field
    assert body_session_key(b'{"user": broken') is None
    # A user message quoting a user field is escaped inside the JSON string: no match.
    assert body_session_key(json.dumps(chat('say {"user": "x"}')).encode()) is None


def test_router_pins_migrates_and_expires() -> None:
    pool = ReplicaPool.of(["http://a:1", "http://b:2"], unhealthy_after=1)
    router = ConsistentRouter(pool, ttl_s=3600, max_sessions=2)
    first, decision = router.route("e1")
    assert decision == "new" and first is not None
    assert router.route("e1") == (first, "sticky")
    router.route("e2")
    router.route("e3")  # evicts e1 (LRU bound 2)
    assert "e1" not in router.sessions and len(router.sessions) == 2
    assert sum(r.sessions for r in pool.list_replicas()) == 2
    pinned = router.sessions["e2"][0]
    pool.drain(pinned)
    moved, decision = router.route("e2")
    assert decision == "migrated" and moved is not None and moved.id != pinned
    pool.drain(pinned, draining=False)
    for replica in pool.list_replicas():
        pool.record_failure(replica)
    assert router.route("e9") == (None, "new")
    expiring = ConsistentRouter(ReplicaPool.of(["http://a:1"], 3), ttl_s=0.0, max_sessions=10)
    expiring.route("e")
    wait_until(lambda: expiring.route("e")[1] == "new", 2, "the sticky entry to expire")
    assert replica_id("http://127.0.0.1:8001/") == "127.0.0.1:8001"


def test_bounded_loads_and_pins_across_adds_and_removes() -> None:
    urls = [f"http://r{i}:1" for i in range(8)]
    pool = ReplicaPool.of(urls, unhealthy_after=1)
    router = ConsistentRouter(pool, ttl_s=3600, max_sessions=10_000, epsilon=0.25)
    for i in range(1000):
        router.route(f"ep-{i}")
    loads = [r.sessions for r in pool.list_replicas()]
    assert sum(loads) == 1000 and max(loads) <= math.ceil(1.25 * 1000 / 8)
    before = dict(router.sessions)
    pool.add("http://r8:1")  # only the excess over the new bound moves (overload), the rest stays pinned
    bound = math.ceil(1.25 * 1000 / 9)
    excess = sum(max(0, load - bound) for load in loads)
    decisions = [router.route(k)[1] for k in before]
    assert set(decisions) <= {"sticky", "overload"} and decisions.count("overload") <= excess
    assert max(r.sessions for r in pool.list_replicas()) <= bound
    before = dict(router.sessions)
    removed = pool.list_replicas()[0].id
    pool.remove(removed)
    moved = {k for k in before if router.route(k)[0].id != before[k][0]}  # type: ignore[union-attr]
    assert moved == {k for k, (r, _) in before.items() if r == removed}


def test_routing_simulation_default_keeps_caches_warm_and_loads_even() -> None:
    from bench.routing_sim import ConsistentBounded, RoundRobin, simulate

    sizes = {"replicas": 8, "episodes": 400, "rounds": 60, "churn_every": 30}
    default = simulate(lambda names: ConsistentBounded(names, ttl_rounds=3, epsilon=0.25), **sizes)
    baseline = simulate(lambda names: RoundRobin(), **sizes)
    assert default.hit_rate >= 0.9 and baseline.hit_rate < 0.3
    assert default.load_ratio <= 1.25


def test_round_robin_ignores_session_keys_and_skips_unroutable_replicas() -> None:
    pool = ReplicaPool.of(["http://a:1", "http://b:2", "http://c:3"], unhealthy_after=1)
    router = ConsistentRouter(pool, ttl_s=3600, max_sessions=10, policy="round_robin")
    picked = [router.route("same-episode") for _ in range(4)]
    assert [(r.id if r else None, d) for r, d in picked] == [
        ("a:1", "round_robin"), ("b:2", "round_robin"), ("c:3", "round_robin"), ("a:1", "round_robin")]
    assert not router.sessions  # nothing pinned
    pool.drain("b:2")
    assert sorted(router.route(None)[0].id for _ in range(2)) == ["a:1", "c:3"]  # type: ignore[union-attr]


def test_least_loaded_counts_the_engines_own_requests() -> None:
    from services.model_gateway.engine_load import EngineLoad

    pool = ReplicaPool.of(["http://a:1", "http://b:2"], unhealthy_after=1)
    router = ConsistentRouter(pool, ttl_s=3600, max_sessions=10)
    a, b = pool.list_replicas()
    assert router.least_loaded() is a  # a tie: by id
    a.engine = EngineLoad(running=2, waiting=1)  # other clients' requests at a's engine
    b.in_flight = 2
    assert a.load == 3 and b.load == 2 and router.least_loaded() is b
    b.engine = EngineLoad(running=0, waiting=0)  # a stale scrape never hides the gateway's own requests
    assert b.load == 2
