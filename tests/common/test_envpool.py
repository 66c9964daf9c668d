"""The env pool's O(1) lease (issue 27, point 1) against a real redis-server: a fixed number of Redis
commands per lease at 10,000 envs (counted by the server: `INFO commandstats`), every env back in the
free set exactly once after releases, expiries and health changes, and `status()` in three reads."""

from __future__ import annotations

import random
import threading

import pytest
import redis

from common import keys
from common.envpool import EnvInfo, EnvPool, Lease
from common.polling import wait_until

#: Commands Redis runs for one lease without `avoid` (the EVALSHA and those its script calls): the
#: same for 10 envs and for 10,000.
LEASE_COMMANDS = {"evalsha": 1, "zpopmin": 1, "hget": 1, "zrem": 1, "sismember": 1, "set": 1, "time": 1, "zadd": 1}
#: And for its release (owner check, then the env back in both free sets, then the wake-up of a waiter).
RELEASE_COMMANDS = {"evalsha": 1, "get": 1, "del": 1, "pttl": 1, "zrem": 1, "hget": 1, "sismember": 1, "zadd": 2,
                    "incr": 1, "lpush": 1, "ltrim": 1}


@pytest.fixture()
def client(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(redis_url)


def register(client: redis.Redis, count: int, provider: str = "kubernetes:cua-envs/default") -> list[str]:
    """`count` envs registered through the pool's own `register` (one pipeline); their ids."""
    with client.pipeline(transaction=False) as pipe:
        registrar = EnvPool(pipe)  # type: ignore[arg-type]
        ids = [registrar.register(f"http://10.{i // 65536}.{i // 256 % 256}.{i % 256}:5000", provider).env_id
               for i in range(count)]
        pipe.execute()
    return ids


def commands(client: redis.Redis) -> dict[str, int]:
    """Calls per command since the last `CONFIG RESETSTAT` (commands run by scripts included)."""
    stats: dict[str, dict[str, float]] = client.info("commandstats")  # type: ignore[assignment]
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()
            if name != "cmdstat_config|resetstat"}


def leases_cost(client: redis.Redis, pool: EnvPool, count: int) -> tuple[list[Lease], dict[str, int]]:
    warm_up = pool.try_lease("warm-up", 60_000)  # loads the scripts: SCRIPT LOAD is not part of a lease
    assert warm_up is not None
    pool.release(warm_up)
    client.config_resetstat()
    leases = [pool.try_lease(f"rollout-{i}#1", 60_000) for i in range(count)]
    assert all(lease is not None for lease in leases)
    return leases, commands(client)  # type: ignore[return-value]


@pytest.mark.parametrize("envs", [10, 10_000])
def test_a_lease_costs_the_same_commands_at_10_and_10000_envs(client: redis.Redis, envs: int) -> None:
    ids = register(client, envs)
    pool = EnvPool(client)
    count = min(envs - 1, 200)
    leases, calls = leases_cost(client, pool, count)
    assert calls == {name: n * count for name, n in LEASE_COMMANDS.items()}
    held = {lease.env.env_id for lease in leases if lease is not None}
    assert len(held) == count and held <= set(ids)
    assert client.zcard(keys.ENV_FREE) == envs - count
    client.config_resetstat()
    for lease in leases:
        pool.release(lease)  # type: ignore[arg-type]
    assert commands(client) == {name: n * count for name, n in RELEASE_COMMANDS.items()}
    assert client.zcard(keys.ENV_FREE) == envs and client.zcard(keys.ENV_LEASED) == 0


def test_every_way_out_of_a_lease_frees_the_env_exactly_once(client: redis.Redis) -> None:
    ids = register(client, 3)
    pool = EnvPool(client)
    lease = pool.try_lease("a#1", 60_000)
    assert lease is not None and lease.env.env_id not in pool.free_ids()
    pool.release(lease)
    pool.release(lease)  # a second release of the same lease: no effect
    assert sorted(pool.free_ids()) == ids and client.zcard(keys.ENV_LEASED) == 0
    # an owner that died: its lease expires, and the reaper's reclaim frees the env once
    dead = pool.try_lease("dead#1", 50)
    assert dead is not None
    wait_until(lambda: pool.reclaim() == 1, 5, "the expired lease to be reclaimed")
    assert pool.reclaim() == 0 and sorted(pool.free_ids()) == ids
    # a pool written by an older version (no free set): reconcile rebuilds it, leased envs left out
    held = pool.try_lease("b#1", 60_000)
    assert held is not None
    client.delete(keys.ENV_FREE, keys.env_free("kubernetes:cua-envs/default"))
    assert pool.reconcile(batch=2) == 2
    assert pool.free_ids() == set(ids) - {held.env.env_id}
    assert pool.reconcile() == 0


def test_unhealthy_envs_leave_the_free_set_and_come_back_when_healthy_and_unleased(client: redis.Redis) -> None:
    first, second = register(client, 2)
    pool = EnvPool(client)
    pool.mark_unhealthy(first)
    assert pool.free_ids() == {second}
    lease = pool.try_lease("a#1", 60_000)
    assert lease is not None and lease.env.env_id == second
    pool.mark_unhealthy(second)  # failed while leased: its release does not free it
    pool.release(lease)
    assert pool.free_ids() == set() and pool.try_lease("b#1", 60_000) is None
    assert pool.claim(first, "health-probe", 60_000)  # re-admitted while a probe holds it: free on release
    pool.mark_unhealthy(first, unhealthy=False)
    assert pool.free_ids() == set()
    pool.release(Lease(EnvInfo(first, "", ""), "health-probe", 60_000))
    assert pool.free_ids() == {first}
    pool.unregister(first)
    assert pool.free_ids() == set() and client.zcard(keys.env_free("kubernetes:cua-envs/default")) == 0


def test_concurrent_leasers_and_dying_owners_never_share_an_env_and_lose_none(client: redis.Redis,
                                                                            redis_url: str) -> None:
    ids = register(client, 4)
    holders: dict[str, str] = {}
    guard = threading.Lock()
    problems: list[str] = []

    def work(worker: int) -> None:
        pool = EnvPool(redis.Redis.from_url(redis_url))
        rng = random.Random(worker)
        for i in range(60):
            owner = f"w{worker}-{i}#1"
            dies = rng.random() < 0.1
            lease = pool.lease(owner, 100 if dies else 60_000, wait_s=30, poll_s=0.05)
            env_id = lease.env.env_id
            with guard:
                if env_id in holders:
                    problems.append(f"{env_id} leased by {owner} while {holders[env_id]} holds it")
                if not dies:
                    holders[env_id] = owner
            if dies:
                continue  # never renews nor releases: the lease expires
            with guard:
                del holders[env_id]
            pool.release(lease)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not problems
    pool = EnvPool(client)
    wait_until(lambda: pool.reclaim() >= 0 and pool.free_ids() == set(ids), 10, "every env free again")
    assert client.zcard(keys.ENV_LEASED) == 0 and pool.status().idle == 4


def test_status_reads_the_pool_in_three_commands(client: redis.Redis) -> None:
    register(client, 1000)
    pool = EnvPool(client)
    pool.mark_unhealthy("10.0.0.7-5000")
    lease = pool.try_lease("a#1", 60_000)
    client.config_resetstat()
    status = pool.status()
    assert commands(client) == {"hgetall": 1, "smembers": 1, "mget": 1}
    assert (status.total, status.leased, status.unhealthy, status.idle) == (1000, 1, 1, 998)
    assert lease is not None and [r["leased_by"] for r in status.envs if r["state"] == "leased"] == ["a#1"]
