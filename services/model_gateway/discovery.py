"""The gateway's replica list kept in step with DNS (`GATEWAY_REPLICAS`).

A configured URL whose host is a DNS name stands for every IPv4 address the name resolves to (compose
replicas of one service, a Kubernetes headless Service): each address is a replica of its own, balanced and
health-checked apart (`common.dns.expand_urls`, as the runner's `static` env provider does). Names are
resolved again at every health round: an address that appears is added, one that disappears is removed. A
name that does not resolve (yet) stays in the pool under its name, so its failing health probes show it
down instead of it vanishing. IP-literal URLs are kept as they are. Replicas added through the admin API are
never touched here.
"""

from __future__ import annotations

import asyncio
import logging

from common.dns import Resolver, expand_urls, resolve_ipv4
from services.model_gateway.replicas import ReplicaPool, replica_id

log = logging.getLogger(__name__)


def expand(urls: list[str], resolver: Resolver) -> list[str]:
    """The replica URLs `urls` stand for: one per address of each DNS name (port and path kept), the URL
    itself for an IP literal or a name that does not resolve. Blocking (DNS).

    Raises: ValueError for a URL without a host."""
    replicas: list[str] = []
    for url in urls:
        addresses, _ = expand_urls([url], resolver)
        replicas += addresses or [url.rstrip("/")]
    return replicas


class ReplicaDiscovery:
    """Adds and removes the pool's replicas that `urls` stand for (module doc).

    `resolver` is the system resolver unless a test passes a stand-in; `version` is the policy version new
    replicas start at (None: unknown until they respond)."""

    def __init__(self, pool: ReplicaPool, urls: list[str], resolver: Resolver = resolve_ipv4,
                 version: str | None = None) -> None:
        self.pool = pool
        self.urls = urls
        self.resolver = resolver
        self.version = version
        self._managed: set[str] = set()

    def apply(self, replica_urls: list[str]) -> tuple[list[str], list[str]]:
        """Make the pool's managed replicas exactly `replica_urls`; returns `(added ids, removed ids)`."""
        wanted = {replica_id(url): url for url in replica_urls}
        added = [rid for rid in wanted if rid not in self._managed and self.pool.get(rid) is None]
        for rid in added:
            self.pool.add(wanted[rid]).model_version = self.version
        removed = [rid for rid in sorted(self._managed - set(wanted)) if self.pool.remove(rid)]
        self._managed = (self._managed & set(wanted)) | set(added)
        for rid in added:
            log.info("replica %s added (%s)", rid, wanted[rid])
        for rid in removed:
            log.info("replica %s removed: its name no longer resolves to it", rid)
        return added, removed

    def sync(self) -> tuple[list[str], list[str]]:
        """Resolve now (blocking) and apply; returns `(added ids, removed ids)`."""
        return self.apply(expand(self.urls, self.resolver))

    async def refresh(self) -> tuple[list[str], list[str]]:
        """`sync` with the DNS lookups off the event loop (pool changes stay on it)."""
        return self.apply(await asyncio.to_thread(expand, self.urls, self.resolver))
