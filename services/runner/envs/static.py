"""`static` provider: env URLs from settings (`RUNNER_ENV_URLS`), DNS names re-resolved periodically.

A URL whose host is a DNS name stands for every IPv4 address the name resolves to (compose
replicas behind a service name, a headless Service). The name is resolved again every
`resolve_interval_s` seconds: a replica that appears is registered, one that disappears is
unregistered (its lease, if any, left to expire). A name that does not resolve (yet) registers no
env and is retried at the next interval. A URL with an IP literal is registered as it is.
"""

from __future__ import annotations

import logging

from common.dns import Resolver, expand_urls, resolve_ipv4
from common.envpool import EnvPool, env_id_for_url
from services.runner.envs.base import PooledProvider, Upkeep

log = logging.getLogger(__name__)

class StaticProvider(PooledProvider):
    """Registers `urls` (flavor `flavor`) and keeps the registry in step with DNS.

    `resolve_interval_s` 0 resolves once at start. `resolver` is the system resolver unless a test
    passes a stand-in. Only envs this provider registered are ever unregistered by it."""

    name = "static"

    def __init__(self, pool: EnvPool, lease_ttl_ms: int, urls: list[str], flavor: str,
                 resolve_interval_s: float, resolver: Resolver = resolve_ipv4) -> None:
        super().__init__(pool, lease_ttl_ms)
        self.urls = urls
        self.flavor = flavor
        self.resolver = resolver
        self.resolve_interval_s = resolve_interval_s
        self._registered: set[str] = set()
        self._upkeep: Upkeep | None = None

    def sync(self) -> tuple[int, int]:
        """Resolve the URLs once and update the registry; returns `(registered, unregistered)` counts."""
        expanded, unresolved = expand_urls(self.urls, self.resolver)
        for name in unresolved:
            log.warning("env host %s does not resolve (yet): no env registered for it", name)
        wanted = {env_id_for_url(url): url for url in expanded}
        added = [env_id for env_id in wanted if env_id not in self._registered]
        for env_id, url in wanted.items():
            self.pool.register(url, provider=self.name, env_id=env_id, flavor=self.flavor)
        gone = self._registered - set(wanted)
        for env_id in gone:
            log.info("env %s no longer resolves: unregistered", env_id)
            self.pool.unregister(env_id)
        self._registered = set(wanted)
        return len(added), len(gone)

    def _tick(self) -> None:
        self.sync()

    def start(self) -> None:
        """Register now, then re-resolve every `resolve_interval_s` seconds (unless 0)."""
        if not self.urls:
            return
        if self.resolve_interval_s <= 0:
            self.sync()
            return
        self._upkeep = Upkeep("static-env-resolver", self.resolve_interval_s, self._tick)
        self._upkeep.start()

    def stop(self) -> None:
        """Stop re-resolving (registered envs stay: other runners may use them)."""
        if self._upkeep is not None:
            self._upkeep.stop()
            self._upkeep = None
