"""Env pool in Redis: a registry of env pods and leases with a TTL (SPEC section 4, "Env pool").

A lease costs the same whatever the pool's size: one script (`common/envpool_scripts.py`) pops the first
id of the set of free envs (`keys.ENV_FREE`, or `keys.env_free(provider)`; ZPOPMIN of a sorted set whose
scores are all 0, so in id order as before) and sets its lease key `SET
keys.env_lease(id) <owner> NX PX <ttl>`; the owner renews it while it works. Release, an expired lease
(its owner died: found by the next leaser that finds nothing free, or by the reaper's `reclaim`), a
registration (new or changed) and a health change put the env back in the free sets exactly when it is
registered, healthy, not dedicated and not leased (a set: never twice); the reaper's `reconcile` repairs
a pool written otherwise (by an older version, by hand). One reset per rollout, off the rollout's
critical path: the owner resets the env after its rollout and frees it with `release(lease,
clean=True)`, which adds it to `keys.ENV_CLEAN` in the same script; the next leaser takes that mark
(`take_clean`) and skips the reset. An env without the mark (newly registered, or freed by an expired
lease because its owner died) is reset by its next leaser first, as `POST /reset` is idempotent.
Providers only fill the registry: `local` (the launcher's envs), `static` (URLs or a DNS name resolving
to many addresses, re-resolved), `kubernetes` (pods); see `services/runner/envs/`. Each env records its
flavor (`common.envprotocol`), so the runner calls only the endpoints that flavor has. A `dedicated` env
(a `kubernetes` per-rollout pod) is leased only by the rollout it was created for, never by `try_lease`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import redis

from common import envpool_scripts as lua
from common import keys
from common import redis_typed as rt
from common.envprotocol import EnvProtocol

#: Leases rechecked (earliest deadlines first) by a lease that finds nothing free: an owner that died
#: stops renewing, so its lease soon has the earliest deadline and its env is taken back here.
RECHECK_EARLIEST = 8


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NoEnvAvailable(RuntimeError):
    """No env could be leased before the deadline (all leased, unhealthy, or none registered)."""


@dataclass(frozen=True)
class EnvInfo:
    """A registered env pod: id, base URL of its OSWorld server, provider name, flavor, and whether
    it is dedicated to one rollout (never leased from the pool)."""

    env_id: str
    url: str
    provider: str
    flavor: str = EnvProtocol.DESKTOP_ENV.value
    dedicated: bool = False


@dataclass(frozen=True)
class Lease:
    """A held lease on an env; `owner` is the rollout id (plus attempt) that holds it."""

    env: EnvInfo
    owner: str
    ttl_ms: int


@dataclass(frozen=True)
class PoolStatus:
    """`GET /v1/envs`: counts and per-env state."""

    total: int
    leased: int
    idle: int
    unhealthy: int
    envs: list[dict[str, Any]]


def env_id_for_url(url: str) -> str:
    """Stable env id from a URL: `host-port` (e.g. `127.0.0.1-5000`)."""
    parsed = urlparse(url)
    return f"{parsed.hostname}-{parsed.port or 80}"


def _info(env_id: str, raw: Any) -> EnvInfo:
    """An `EnvInfo` from a registry record (JSON)."""
    data = json.loads(raw)
    return EnvInfo(env_id=env_id, url=data["url"], provider=data.get("provider", "static"),
                   flavor=data.get("flavor", EnvProtocol.DESKTOP_ENV.value),
                   dedicated=bool(data.get("dedicated", False)))


class EnvPool:
    """Registry + leases of env pods, shared by all runners through Redis (see the module docstring)."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._lease = client.register_script(lua.LEASE)
        self._release = client.register_script(lua.RELEASE)
        self._renew = client.register_script(lua.RENEW)
        self._claim = client.register_script(lua.CLAIM)
        self._register = client.register_script(lua.REGISTER)
        self._unregister = client.register_script(lua.UNREGISTER)
        self._mark = client.register_script(lua.MARK)
        self._reclaim = client.register_script(lua.RECLAIM)
        self._reconcile = client.register_script(lua.RECONCILE)

    @staticmethod
    def _keys(*extra: str) -> list[str]:
        return [keys.ENV_REGISTRY, keys.ENV_UNHEALTHY, keys.ENV_LEASED, keys.ENV_FREE, *extra]

    @staticmethod
    def _args(*extra: Any) -> list[Any]:
        return [keys.ENV_LEASE_PREFIX, keys.ENV_LEASE_SUFFIX, *extra]

    def register(self, url: str, provider: str, env_id: str | None = None,
                 flavor: str = EnvProtocol.DESKTOP_ENV.value, dedicated: bool = False) -> EnvInfo:
        """Add (or update) an env in the registry and return it; it is free to lease at once unless
        leased, unhealthy or dedicated."""
        info = EnvInfo(env_id=env_id or env_id_for_url(url), url=url.rstrip("/"), provider=provider,
                       flavor=str(flavor), dedicated=dedicated)
        record = {"url": info.url, "provider": provider, "flavor": info.flavor, "dedicated": dedicated}
        self._register(keys=self._keys(), args=self._args(info.env_id, json.dumps(record)))
        return info

    def unregister(self, env_id: str) -> None:
        """Remove an env from the registry and the free sets (its lease, if any, is left to expire)."""
        self._unregister(keys=self._keys(keys.ENV_CLEAN), args=self._args(env_id))

    def envs(self) -> list[EnvInfo]:
        """Every registered env, sorted by id (one HGETALL of the registry: O(envs), not for hot paths)."""
        raw = rt.hgetall(self.client, keys.ENV_REGISTRY)
        return sorted((_info(_text(env_id), value) for env_id, value in raw.items()), key=lambda e: e.env_id)

    def unhealthy_envs(self) -> list[EnvInfo]:
        """The registered envs marked unhealthy, sorted by id (SMEMBERS + HMGET: O(unhealthy envs))."""
        ids = sorted(_text(m) for m in rt.smembers(self.client, keys.ENV_UNHEALTHY))
        if not ids:
            return []
        records = rt.hmget(self.client, keys.ENV_REGISTRY, ids)
        return [_info(env_id, raw) for env_id, raw in zip(ids, records, strict=True) if raw is not None]

    def mark_unhealthy(self, env_id: str, unhealthy: bool = True) -> None:
        """Keep an env out of leasing (out of the free sets), or bring it back after a passed health
        check (free again unless leased)."""
        self._mark(keys=self._keys(), args=self._args(env_id, "1" if unhealthy else "0"))

    def _lease_once(self, owner: str, ttl_ms: int, avoid: Collection[str],
                    provider: str | None) -> tuple[Lease | None, int]:
        """One lease script: (the lease, 0) or (None, number of the last release pushed to ENV_FREED)."""
        source = keys.env_free(provider) if provider is not None else keys.ENV_FREE
        reply: Any = self._lease(
            keys=self._keys(source, keys.ENV_FREED_SEQ),
            args=self._args(owner, ttl_ms, "1" if provider is not None else "0", RECHECK_EARLIEST, *sorted(set(avoid))))
        if int(reply[0]) == 1:
            return Lease(env=_info(_text(reply[1]), reply[2]), owner=owner, ttl_ms=ttl_ms), 0
        return None, int(reply[1])

    def try_lease(self, owner: str, ttl_ms: int, avoid: Collection[str] = (),
                  provider: str | None = None) -> Lease | None:
        """Lease a free healthy env (of `provider`, when given; the first free one in id order: ZPOPMIN),
        or return None when every env is taken. One EVALSHA; Redis runs 7 commands in it, whatever
        the pool's size (`tests/common/test_envpool.py` counts them).

        Envs whose id is in `avoid` (where an earlier attempt of the same rollout failed) are taken
        only when no other env is free: a retry goes to a different env whenever one is free.
        """
        return self._lease_once(owner, ttl_ms, avoid, provider)[0]

    def lease(self, owner: str, ttl_ms: int, wait_s: float, poll_s: float = 0.2,
              avoid: Collection[str] = (), provider: str | None = None) -> Lease:
        """Lease an env (of `provider` when given; preferring envs not in `avoid`, see `try_lease`),
        waiting until one is free: woken by the next `release` (`keys.ENV_FREED`), and trying again
        at least every `poll_s` seconds (an env also frees up when a dead owner's lease expires, or
        is registered). Raises: NoEnvAvailable after `wait_s` seconds."""
        deadline = time.monotonic() + wait_s
        while True:
            lease, seen = self._lease_once(owner, ttl_ms, avoid, provider)
            if lease is not None:
                return lease
            left = deadline - time.monotonic()
            if left <= 0:
                raise NoEnvAvailable(
                    f"no env free after {wait_s:.0f}s ({self.client.hlen(keys.ENV_REGISTRY)} registered); "
                    "start more envs or runners wait longer (RUNNER_LEASE_WAIT_S)"
                )
            self._wait_for_release(seen, min(poll_s, left))

    def _wait_for_release(self, seen: int, timeout_s: float) -> None:
        """Block up to `timeout_s` seconds for a release numbered above `seen` (one made after the
        caller last looked for a free env); older releases still listed are dropped on the way."""
        until = time.monotonic() + timeout_s
        while (left := until - time.monotonic()) > 0:
            popped = rt.blpop(self.client, [keys.ENV_FREED], max(left, 0.001))
            if popped is None or int(popped[1]) > seen:
                return

    def claim(self, env_id: str, owner: str, ttl_ms: int) -> bool:
        """Take the lease of `env_id` for `owner` (SET NX PX), registered or not (a pod being created, a
        health probe); False when held. Its release or expiry frees the env like any lease's."""
        return bool(self._claim(keys=self._keys(keys.env_lease(env_id)), args=self._args(owner, ttl_ms, env_id)))

    def lease_owner(self, env_id: str) -> str | None:
        """Who holds the lease of `env_id` now, None when nobody does."""
        owner = self.client.get(keys.env_lease(env_id))
        return None if owner is None else _text(owner)

    def renew(self, lease: Lease) -> bool:
        """Extend the lease by its TTL; False when it was lost (expired and taken by another)."""
        return bool(self._renew(keys=self._keys(keys.env_lease(lease.env.env_id)),
                                args=self._args(lease.owner, lease.ttl_ms, lease.env.env_id)))

    def owns(self, lease: Lease) -> bool:
        """True while `lease` is still held by its owner (not expired, not taken by another)."""
        return self.lease_owner(lease.env.env_id) == lease.owner

    def release(self, lease: Lease, clean: bool = False) -> None:
        """Give the env back (only if we still own the lease): free again unless unhealthy, dedicated or
        unregistered meanwhile. `clean=True` when it was reset after its rollout, so its next leaser
        skips the reset (see `take_clean`)."""
        self._release(keys=self._keys(keys.env_lease(lease.env.env_id), keys.ENV_CLEAN, keys.ENV_FREED,
                                      keys.ENV_FREED_SEQ),
                      args=self._args(lease.owner, lease.env.env_id, "1" if clean else "0"))

    def take_clean(self, lease: Lease) -> bool:
        """True when the leased env was reset after its last rollout and not used since; takes the
        mark (SREM), so the env counts as dirty again from here on."""
        return bool(self.client.srem(keys.ENV_CLEAN, lease.env.env_id))

    def reclaim(self, limit: int = 1000) -> int:
        """Free the envs of leases past their deadline whose key is gone (owners that died), up to
        `limit` leases checked (earliest first); the reaper calls it each round. Returns envs freed."""
        return rt.script_int(self._reclaim(keys=self._keys(), args=self._args(limit)))

    def reconcile(self, batch: int = 500) -> int:
        """Settle every registered env again (free exactly when healthy, not dedicated and unleased):
        repairs a pool written by an older version or by hand. O(envs) in batches of `batch` ids (one
        script each, so Redis is never blocked long); the reaper runs it with the env recheck.
        Returns the envs put back into the free sets."""
        freed = 0
        for ids in self._registry_batches(batch):
            freed += rt.script_int(self._reconcile(keys=self._keys(), args=self._args(*ids)))
        return freed

    def _registry_batches(self, batch: int) -> Iterator[list[str]]:
        ids: list[str] = []
        for env_id, _record in self.client.hscan_iter(keys.ENV_REGISTRY, count=batch):
            ids.append(_text(env_id))
            if len(ids) >= batch:
                yield ids
                ids = []
        if ids:
            yield ids

    def free_ids(self) -> set[str]:
        """The ids in the free set (ZRANGE: O(free envs); checks and tests)."""
        return {_text(m) for m in rt.zrange(self.client, keys.ENV_FREE, 0, -1)}

    def status(self) -> PoolStatus:
        """Counts of total / leased / idle / unhealthy envs and each env's state: three reads (HGETALL
        of the registry, SMEMBERS of the unhealthy set, MGET of the lease keys), not one per env."""
        with self.client.pipeline(transaction=False) as pipe:
            pipe.hgetall(keys.ENV_REGISTRY)
            pipe.smembers(keys.ENV_UNHEALTHY)
            raw, unhealthy_raw = pipe.execute()
        envs = sorted((_info(_text(env_id), value) for env_id, value in raw.items()), key=lambda e: e.env_id)
        unhealthy = {_text(m) for m in unhealthy_raw}
        owners = rt.mget(self.client, [keys.env_lease(e.env_id) for e in envs])
        rows = []
        for env, owner in zip(envs, owners, strict=True):
            state = "unhealthy" if env.env_id in unhealthy else ("leased" if owner else "idle")
            rows.append({"env_id": env.env_id, "url": env.url, "provider": env.provider, "flavor": env.flavor,
                         "state": state, "leased_by": None if owner is None else _text(owner)})
        count = {s: sum(1 for r in rows if r["state"] == s) for s in ("leased", "idle", "unhealthy")}
        return PoolStatus(total=len(rows), envs=rows, **count)


class LeaseKeeper:
    """Renews a lease every ttl/3 in a daemon thread until `stop()`; `lost` is set if renewal fails."""

    def __init__(self, pool: EnvPool, lease: Lease) -> None:
        self.pool = pool
        self.lease = lease
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        interval_s = self.lease.ttl_ms / 3000.0
        while not self._stop.wait(interval_s):
            try:
                if not self.pool.renew(self.lease):
                    self.lost.set()
                    return
            except redis.RedisError:
                continue  # transient: the TTL leaves room for two more tries

    def stop(self) -> None:
        """Stop renewing (does not release the lease)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
