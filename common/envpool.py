"""Env pool in Redis: a registry of env pods and leases with a TTL (SPEC section 4, "Env pool").

An env is leased by `SET keys.env_lease(id) <owner> NX PX <ttl>`; the owner renews it while it works.
One reset per rollout, off the rollout's critical path: the owner resets the env after its rollout and
frees it with `release(lease, clean=True)`, which adds it to `keys.ENV_CLEAN` in the same script; the
next leaser takes that mark (`take_clean`) and skips the reset. An env without the mark (newly
registered, or freed by an expired lease because its owner died) is reset by its next leaser first,
as `POST /reset` is idempotent. Providers only fill the registry: `local` (the launcher's envs),
`static` (URLs or a DNS name resolving to many addresses, re-resolved), `kubernetes` (pods); see
`services/runner/envs/`. Each env records its flavor (`common.envflavor`), so the runner calls only
the endpoints that flavor has. A `dedicated` env (a `kubernetes` per-rollout pod) is leased only
by the rollout it was created for, never by `try_lease`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import redis

from common import keys
from common.envflavor import EnvFlavor

# Release and renew only if we still own the lease (compare-and-delete / compare-and-expire).
# A release also pushes its number to the freed list, waking one leaser blocked on it (`EnvPool.lease`).
# KEYS: lease, clean set, freed list, freed counter; ARGV: owner, env id, "1" to mark the env clean.
_RELEASE_LUA = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] == '1' then redis.call('sadd', KEYS[2], ARGV[2]) end
redis.call('del', KEYS[1])
redis.call('lpush', KEYS[3], redis.call('incr', KEYS[4]))
redis.call('ltrim', KEYS[3], 0, 63)
return 1
"""
_RENEW_LUA = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end
"""


class NoEnvAvailable(RuntimeError):
    """No env could be leased before the deadline (all leased, unhealthy, or none registered)."""


@dataclass(frozen=True)
class EnvInfo:
    """A registered env pod: id, base URL of its OSWorld server, provider name, flavor, and whether
    it is dedicated to one rollout (never leased from the pool)."""

    env_id: str
    url: str
    provider: str
    flavor: str = EnvFlavor.DESKTOP_ENV.value
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


class EnvPool:
    """Registry + leases of env pods, shared by all runners through Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._release = client.register_script(_RELEASE_LUA)
        self._renew = client.register_script(_RENEW_LUA)

    def register(self, url: str, provider: str, env_id: str | None = None,
                 flavor: str = EnvFlavor.DESKTOP_ENV.value, dedicated: bool = False) -> EnvInfo:
        """Add (or update) an env in the registry and return it."""
        info = EnvInfo(env_id=env_id or env_id_for_url(url), url=url.rstrip("/"), provider=provider,
                       flavor=str(flavor), dedicated=dedicated)
        record = {"url": info.url, "provider": provider, "flavor": info.flavor, "dedicated": dedicated}
        self.client.hset(keys.ENV_REGISTRY, info.env_id, json.dumps(record))
        return info

    def unregister(self, env_id: str) -> None:
        """Remove an env from the registry (its lease, if any, is left to expire)."""
        self.client.hdel(keys.ENV_REGISTRY, env_id)
        self.client.srem(keys.ENV_UNHEALTHY, env_id)
        self.client.srem(keys.ENV_CLEAN, env_id)

    def envs(self) -> list[EnvInfo]:
        """Every registered env, sorted by id."""
        raw: dict[Any, Any] = self.client.hgetall(keys.ENV_REGISTRY)  # type: ignore[assignment]
        infos = []
        for env_id, value in raw.items():
            data = json.loads(value)
            name = env_id.decode() if isinstance(env_id, bytes) else env_id
            infos.append(EnvInfo(env_id=name, url=data["url"], provider=data.get("provider", "static"),
                                 flavor=data.get("flavor", EnvFlavor.DESKTOP_ENV.value),
                                 dedicated=bool(data.get("dedicated", False))))
        return sorted(infos, key=lambda e: e.env_id)

    def mark_unhealthy(self, env_id: str, unhealthy: bool = True) -> None:
        """Keep an env out of leasing (or bring it back) after a failed (or passed) health check."""
        if unhealthy:
            self.client.sadd(keys.ENV_UNHEALTHY, env_id)
        else:
            self.client.srem(keys.ENV_UNHEALTHY, env_id)

    def try_lease(self, owner: str, ttl_ms: int, avoid: Collection[str] = (),
                  provider: str | None = None) -> Lease | None:
        """Lease the first free healthy env (of `provider`, when given), or return None when every
        env is taken.

        Envs whose id is in `avoid` (where an earlier attempt of the same rollout failed) are taken
        only when no other env is free: a retry goes to a different env whenever one is free.
        """
        unhealthy = {m.decode() for m in self.client.smembers(keys.ENV_UNHEALTHY)}  # type: ignore[union-attr]
        healthy = [env for env in self.envs() if env.env_id not in unhealthy and not env.dedicated
                   and (provider is None or env.provider == provider)]
        for env in sorted(healthy, key=lambda e: e.env_id in avoid):  # stable: avoided envs last
            if self.client.set(keys.env_lease(env.env_id), owner, nx=True, px=ttl_ms):
                return Lease(env=env, owner=owner, ttl_ms=ttl_ms)
        return None

    def lease(self, owner: str, ttl_ms: int, wait_s: float, poll_s: float = 0.2,
              avoid: Collection[str] = (), provider: str | None = None) -> Lease:
        """Lease an env (of `provider` when given; preferring envs not in `avoid`, see `try_lease`),
        waiting until one is free: woken by the next `release` (`keys.ENV_FREED`), and trying again
        at least every `poll_s` seconds (an env also frees up when a dead owner's lease expires, or
        is registered). Raises: NoEnvAvailable after `wait_s` seconds."""
        deadline = time.monotonic() + wait_s
        while True:
            seen = int(self.client.get(keys.ENV_FREED_SEQ) or 0)  # type: ignore[arg-type]
            lease = self.try_lease(owner, ttl_ms, avoid, provider)
            if lease is not None:
                return lease
            left = deadline - time.monotonic()
            if left <= 0:
                raise NoEnvAvailable(
                    f"no env free after {wait_s:.0f}s ({len(self.envs())} registered); "
                    "start more envs or runners wait longer (RUNNER_LEASE_WAIT_S)"
                )
            self._wait_for_release(seen, min(poll_s, left))

    def _wait_for_release(self, seen: int, timeout_s: float) -> None:
        """Block up to `timeout_s` seconds for a release numbered above `seen` (one made after the
        caller last looked for a free env); older releases still listed are dropped on the way."""
        until = time.monotonic() + timeout_s
        while (left := until - time.monotonic()) > 0:
            popped = self.client.blpop([keys.ENV_FREED], timeout=max(left, 0.001))
            if popped is None or int(popped[1]) > seen:  # type: ignore[index]
                return

    def claim(self, env_id: str, owner: str, ttl_ms: int) -> bool:
        """Take the lease of `env_id` for `owner` (SET NX PX), registered or not; False when held."""
        return bool(self.client.set(keys.env_lease(env_id), owner, nx=True, px=ttl_ms))

    def lease_owner(self, env_id: str) -> str | None:
        """Who holds the lease of `env_id` now, None when nobody does."""
        owner = self.client.get(keys.env_lease(env_id))
        return owner.decode() if isinstance(owner, bytes) else owner  # type: ignore[return-value]

    def renew(self, lease: Lease) -> bool:
        """Extend the lease by its TTL; False when it was lost (expired and taken by another)."""
        return bool(self._renew(keys=[keys.env_lease(lease.env.env_id)], args=[lease.owner, lease.ttl_ms]))

    def owns(self, lease: Lease) -> bool:
        """True while `lease` is still held by its owner (not expired, not taken by another)."""
        current = self.client.get(keys.env_lease(lease.env.env_id))
        return (current.decode() if isinstance(current, bytes) else current) == lease.owner

    def release(self, lease: Lease, clean: bool = False) -> None:
        """Give the env back (only if we still own the lease); `clean=True` when it was reset after
        its rollout, so its next leaser skips the reset (see `take_clean`)."""
        self._release(keys=[keys.env_lease(lease.env.env_id), keys.ENV_CLEAN, keys.ENV_FREED, keys.ENV_FREED_SEQ],
                      args=[lease.owner, lease.env.env_id, "1" if clean else "0"])

    def take_clean(self, lease: Lease) -> bool:
        """True when the leased env was reset after its last rollout and not used since; takes the
        mark (SREM), so the env counts as dirty again from here on."""
        return bool(self.client.srem(keys.ENV_CLEAN, lease.env.env_id))

    def status(self) -> PoolStatus:
        """Counts of total / leased / idle / unhealthy envs and each env's state."""
        unhealthy = {m.decode() for m in self.client.smembers(keys.ENV_UNHEALTHY)}  # type: ignore[union-attr]
        rows = []
        for env in self.envs():
            owner = self.client.get(keys.env_lease(env.env_id))
            state = "unhealthy" if env.env_id in unhealthy else ("leased" if owner else "idle")
            rows.append(
                {
                    "env_id": env.env_id,
                    "url": env.url,
                    "provider": env.provider,
                    "flavor": env.flavor,
                    "state": state,
                    "leased_by": owner.decode() if isinstance(owner, bytes) else owner,
                }
            )
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
