"""The env provider interface: how a runner gets an env for one rollout attempt and gives it back.

A provider has two sides. Upkeep (`start()` / `stop()`) runs in the runner worker's main process,
in a daemon thread: it fills the Redis registry (`common.envpool`), re-resolves DNS names, keeps a
warm pool and reaps orphans. Leasing (`acquire()` / `release()`) runs in the RQ work-horse, once per
attempt. Providers that serve envs from the shared registry inherit `PooledProvider`.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from dataclasses import dataclass

import redis

from common.env_client import DesktopEnvClient, EnvError
from common.envpool import EnvInfo, EnvPool, Lease, NoEnvAvailable
from common.envprotocol import spec
from common.status import RolloutStatus

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EnvRequest:
    """Who asks for an env: the attempt's lease `owner` (`{rollout_id}#{attempt}`), its run and
    rollout ids (pod labels), and env ids to avoid (where earlier attempts failed)."""

    owner: str
    run_id: str
    rollout_id: str
    avoid: Collection[str] = ()


class EnvUnavailable(RuntimeError):
    """No env for this attempt: `status` is `env_init_failed` (the message names the cause, e.g.
    the Kubernetes reason `ImagePullBackOff`)."""

    def __init__(self, message: str, status: RolloutStatus = RolloutStatus.ENV_INIT_FAILED) -> None:
        super().__init__(message)
        self.status = status


class EnvProvider(ABC):
    """One source of envs. Subclasses implement `acquire` / `release`; upkeep is optional."""

    #: Name stored as each env's `provider` in the registry.
    name: str = ""

    def __init__(self, pool: EnvPool, lease_ttl_ms: int) -> None:
        self.pool = pool
        self.lease_ttl_ms = lease_ttl_ms

    def start(self) -> None:  # noqa: B027 - optional hook
        """Start the upkeep (runner main process). Default: nothing to keep up."""

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Stop the upkeep; envs stay registered unless the provider owns them."""

    @abstractmethod
    def acquire(self, request: EnvRequest, wait_s: float) -> Lease:
        """Lease an env for `request`, waiting at most `wait_s` seconds.
        Raises: EnvUnavailable with the cause."""

    def prepare(self, lease: Lease, env: DesktopEnvClient) -> bool:
        """Make a leased env clean before a rollout: `POST /reset` when its flavor has one, unless the
        env was reset right after its last rollout (`EnvPool.take_clean`; an env freed by a dead owner,
        or new, has no such mark); a flavor without reset is fresh by construction (replaced after each
        use). Returns True when it reset the env. Raises: EnvError."""
        if spec(lease.env.flavor).has_reset and not self.pool.take_clean(lease):
            env.reset()
            return True
        return False

    @abstractmethod
    def release(self, lease: Lease, env: DesktopEnvClient) -> None:
        """Give the env back after a rollout: see `PooledProvider.release`."""

    def explain(self, lease: Lease) -> str | None:
        """Why the env failed, as the platform tells (e.g. the pod's Kubernetes reason), or None."""
        return None


class PooledProvider(EnvProvider):
    """Envs listed in the shared registry and leased from it (`static`, `local`, warm-pool pods).
    `lease_from`: lease only envs registered by that provider name (None: any registered env)."""

    lease_from: str | None = None

    def acquire(self, request: EnvRequest, wait_s: float) -> Lease:
        """Lease a free registered env (preferring envs not in `request.avoid`), polling up to
        `wait_s` seconds. Raises: EnvUnavailable when none frees up."""
        try:
            return self.pool.lease(request.owner, self.lease_ttl_ms, wait_s, avoid=request.avoid,
                                   provider=self.lease_from)
        except NoEnvAvailable as exc:
            raise EnvUnavailable(str(exc)) from exc

    def release(self, lease: Lease, env: DesktopEnvClient) -> None:
        """Clean the env by its flavor's reset strategy, then free the lease. `endpoint`: `POST
        /reset` (an env that fails it is `discard()`ed); `replace`: the used env is `discard()`ed.
        When the lease was lost (expired, maybe leased by another runner) the env is neither reset
        nor released: it may be running someone else's episode now."""
        if not self.pool.owns(lease):
            log.warning("lease on env %s lost: not resetting it", lease.env.env_id)
            return
        clean = False
        try:
            if spec(lease.env.flavor).reset_strategy == "endpoint":
                try:
                    env.reset()
                    clean = True
                except EnvError as exc:
                    self.discard(lease.env, f"failed to reset: {exc}")
            else:
                self.discard(lease.env, f"used, and a {lease.env.flavor} env cannot be reset in place")
        finally:
            self.pool.release(lease, clean=clean)

    def discard(self, env: EnvInfo, why: str) -> None:
        """Take a dirty env out of leasing: marked unhealthy here (until its host reverts or
        restarts it); providers that can replace an env override this."""
        log.warning("env %s %s: marked unhealthy", env.env_id, why)
        self.pool.mark_unhealthy(env.env_id)


class Upkeep:
    """A daemon thread calling `tick()` every `interval_s` seconds until `stop()`. A tick failing
    with one of `transient` (Redis or the API server briefly unreachable) is logged as a warning;
    any other exception is a bug, logged with its traceback; either way the next tick runs."""

    @staticmethod
    def default_transient() -> tuple[type[BaseException], ...]:
        """Redis and socket errors."""
        return (redis.RedisError, OSError)

    def __init__(self, name: str, interval_s: float, tick: Callable[[], None],
                 transient: tuple[type[BaseException], ...] = (redis.RedisError, OSError)) -> None:
        self.interval_s = interval_s
        self._tick = tick
        self._transient = transient
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Run one tick now (so the pool is filled before the worker takes jobs), then the thread."""
        self._safe_tick()
        self._thread.start()

    def _safe_tick(self) -> None:
        try:
            self._tick()
        except self._transient as exc:
            log.warning("%s: upkeep failed, retrying in %.1fs: %s", self._thread.name, self.interval_s, exc)
        except Exception:  # a bug: loud, but the pool keeps being kept up
            log.exception("%s: upkeep crashed (bug), retrying in %.1fs", self._thread.name, self.interval_s)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._safe_tick()

    def stop(self) -> None:
        """Stop the thread and wait for the tick in progress (at most 10 s)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
