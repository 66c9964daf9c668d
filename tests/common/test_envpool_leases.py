"""Env pool leases against a real redis-server: exclusivity, TTL expiry, renewal, owner-checked release."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from common import keys
from common.envpool import EnvPool, LeaseKeeper, NoEnvAvailable
from common.polling import wait_until


@pytest.fixture()
def pool(redis_url: str) -> EnvPool:
    return EnvPool(redis.Redis.from_url(redis_url))


def test_leases_are_exclusive_and_released_only_by_owner(pool: EnvPool) -> None:
    pool.register("http://127.0.0.1:5001", "static")
    pool.register("http://127.0.0.1:5002", "static")
    a = pool.try_lease("rollout-a", 10_000)
    b = pool.try_lease("rollout-b", 10_000)
    assert a and b and a.env.env_id != b.env.env_id
    assert pool.try_lease("rollout-c", 10_000) is None
    status = pool.status()
    assert (status.total, status.leased, status.idle) == (2, 2, 0)
    impostor = type(a)(env=a.env, owner="someone-else", ttl_ms=a.ttl_ms)
    pool.release(impostor)  # not the owner: no effect
    assert pool.try_lease("rollout-c", 10_000) is None
    pool.release(a)
    c = pool.try_lease("rollout-c", 10_000)
    assert c is not None and c.env == a.env


def test_lease_of_a_dead_owner_expires(pool: EnvPool) -> None:
    pool.register("http://127.0.0.1:5001", "static")
    assert pool.try_lease("dead-runner", 200) is not None
    lease = wait_until(lambda: pool.try_lease("next-runner", 10_000), 5, "expired lease to free the env")
    assert lease.owner == "next-runner"


def test_keeper_renews_past_the_ttl(pool: EnvPool) -> None:
    pool.register("http://127.0.0.1:5001", "static")
    lease = pool.try_lease("runner", 300)
    assert lease is not None
    with LeaseKeeper(pool, lease) as keeper:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:  # three TTLs: the lease must hold throughout
            assert pool.try_lease("other", 10_000) is None
            time.sleep(0.05)
        assert not keeper.lost.is_set()


def test_unhealthy_envs_are_not_leased_and_wait_times_out(pool: EnvPool) -> None:
    env = pool.register("http://127.0.0.1:5001", "static")
    pool.mark_unhealthy(env.env_id)
    assert pool.status().unhealthy == 1
    with pytest.raises(NoEnvAvailable, match="no env free"):
        pool.lease("runner", 1000, wait_s=0.3, poll_s=0.05)
    pool.mark_unhealthy(env.env_id, False)
    assert pool.lease("runner", 1000, wait_s=1).env.env_id == env.env_id


def test_lease_prefers_envs_not_avoided_and_falls_back_to_them(pool: EnvPool) -> None:
    first = pool.register("http://127.0.0.1:5001", "static")
    second = pool.register("http://127.0.0.1:5002", "static")
    retry = pool.try_lease("rollout-a#2", 10_000, avoid={first.env_id})
    assert retry is not None and retry.env == second  # the env of the failed attempt is passed over
    fallback = pool.lease("rollout-b#2", 10_000, wait_s=1, avoid={first.env_id})
    assert fallback.env == first  # the only free env, avoided or not: no waiting for another one


def test_a_waiting_leaser_is_woken_by_the_release_not_by_its_poll(pool: EnvPool) -> None:
    pool.register("http://10.0.0.1:5000", "static")
    held = pool.lease("rollout-a", ttl_ms=60_000, wait_s=1)
    got: list[tuple[str, float]] = []

    def wait_for_env() -> None:
        start = time.monotonic()
        lease = pool.lease("rollout-b", ttl_ms=60_000, wait_s=60, poll_s=30)  # one poll would take 30 s
        got.append((lease.owner, time.monotonic() - start))

    waiter = threading.Thread(target=wait_for_env, daemon=True)
    waiter.start()
    wait_until(lambda: b"cmd=blpop" in pool.client.execute_command("CLIENT", "LIST"), 10, "the waiter to block")
    pool.release(held)
    waiter.join(timeout=25)
    assert got and got[0][0] == "rollout-b"
    assert got[0][1] < 25  # woken by the release: its poll would have slept 30 s


def test_releases_nobody_waits_for_are_bounded_and_do_not_wake_a_later_leaser(pool: EnvPool) -> None:
    pool.register("http://10.0.0.1:5000", "static")
    for i in range(100):
        pool.release(pool.lease(f"rollout-{i}", ttl_ms=60_000, wait_s=1))
    assert pool.client.llen(keys.ENV_FREED) == 64  # the newest 64 kept
    held = pool.lease("rollout-x", ttl_ms=60_000, wait_s=1)
    with pytest.raises(NoEnvAvailable):
        pool.lease("rollout-y", ttl_ms=60_000, wait_s=0.5, poll_s=0.5)
    assert pool.client.llen(keys.ENV_FREED) == 0  # the stale releases were dropped while it waited
    pool.release(held)
