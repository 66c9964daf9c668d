"""Replica state of the gateway: circuit breaker, draining, reloads, in-flight requests, served version.

A replica's id is `host:port` of its base URL.

Circuit breaker (per replica), states `closed` -> `open` -> `half_open` -> `closed`:
- closed: routable; `unhealthy_after` consecutive failures (requests or health probes) open it.
- open: not routable for `cooldown_s` seconds; then the next successful health probe makes it half-open.
- half_open: routable for one request at a time (a trial); a successful request or a second successful
  health probe closes it, any failure opens it again (and restarts the cooldown).

Engine load: `engine` is the replica's last `EngineLoad` scraped from its `/metrics` (vLLM's running and waiting
requests, `engine_load.py`), None for a server without vLLM's metrics; `load` is what least-loaded routing compares.

Reload state: `reloading` is true while the rolling reload works on the replica (it is also draining),
`target_version` is the version it is being moved to (requests for that version may wait for it).
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from enum import StrEnum
from urllib.parse import urlparse

from services.model_gateway.engine_load import EngineLoad


class BreakerState(StrEnum):
    """Circuit-breaker state of one replica."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass
class Replica:
    """One upstream vLLM-compatible server."""

    id: str
    url: str
    breaker: BreakerState = BreakerState.CLOSED
    opened_at: float = 0.0
    draining: bool = False
    reloading: bool = False
    target_version: str | None = None
    in_flight: int = 0
    consecutive_failures: int = 0
    model_version: str | None = None
    sessions: int = 0  # episodes pinned here (maintained by the router)
    engine: EngineLoad | None = None  # last scrape of its /metrics (health loop)

    @property
    def healthy(self) -> bool:
        """True unless the breaker is open."""
        return self.breaker != BreakerState.OPEN

    @property
    def routable(self) -> bool:
        """True when a new request may go here now (a half-open replica takes one trial at a time)."""
        if self.draining or self.breaker == BreakerState.OPEN:
            return False
        return self.breaker == BreakerState.CLOSED or self.in_flight == 0

    @property
    def load(self) -> int:
        """Requests on the replica: this gateway's in-flight ones, or its engine's running + waiting requests when
        its last scrape reported more (other gateways' and direct clients' requests count too)."""
        return self.in_flight if self.engine is None else max(self.in_flight, self.engine.requests)

    def as_dict(self) -> dict[str, object]:
        """JSON view for the admin API (`engine_*`: the last scrape of its /metrics, None without one)."""
        engine = self.engine
        return {"id": self.id, "url": self.url, "healthy": self.healthy, "breaker": self.breaker.value,
                "draining": self.draining, "reloading": self.reloading, "target_version": self.target_version,
                "in_flight": self.in_flight, "sessions": self.sessions,
                "consecutive_failures": self.consecutive_failures, "model_version": self.model_version,
                "engine_running": engine.running if engine else None,
                "engine_waiting": engine.waiting if engine else None,
                "kv_cache_usage": engine.kv_cache_usage if engine else None}


def replica_id(url: str) -> str:
    """`host:port` of a replica URL."""
    parsed = urlparse(url)
    return f"{parsed.hostname}:{parsed.port or 80}"


def check_replica_url(url: str) -> str:
    """`url` unchanged if it is a replica base URL `http(s)://host[:port][/path]` with a printable
    ASCII host and a port in 1-65535.

    Raises:
        ValueError: naming what is wrong (scheme, host, port, control characters).
    """
    if not url.isascii() or not url.isprintable() or any(c.isspace() for c in url):
        raise ValueError("replica URL must be printable ASCII without spaces")
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"replica URL scheme must be http or https, not {parsed.scheme!r}")
    try:
        port = parsed.port  # raises ValueError for a non-numeric or out-of-range port
    except ValueError as exc:
        raise ValueError(f"replica URL has a bad port: {exc}") from None
    if not parsed.hostname or port == 0 or not re.fullmatch(r"[A-Za-z0-9._\-\[\]:]+", parsed.hostname):
        raise ValueError(f"replica URL needs a host name or address, got {parsed.netloc!r}")
    return url


@dataclass
class ReplicaPool:
    """The gateway's replicas by id, in insertion order, and a change signal for waiters.

    `changed()` returns an event set at the next state change that may make a replica routable or change
    its version (re-admission, reload end, breaker close, add): requests waiting for a version await it.
    """

    unhealthy_after: int
    cooldown_s: float = 5.0
    replicas: dict[str, Replica] = field(default_factory=dict)
    _event: asyncio.Event | None = None

    @classmethod
    def of(cls, urls: list[str], unhealthy_after: int, cooldown_s: float = 5.0,
           version: str | None = None) -> ReplicaPool:
        """A pool over `urls`, every replica starting at `version` (None: unknown until it responds)."""
        pool = cls(unhealthy_after=unhealthy_after, cooldown_s=cooldown_s)
        for url in urls:
            pool.add(url).model_version = version
        return pool

    def changed(self) -> asyncio.Event:
        """An event set at the next notable change (call inside the event loop)."""
        if self._event is None:
            self._event = asyncio.Event()
        return self._event

    def notify(self) -> None:
        """Wake every waiter of `changed()`; later waiters get a fresh event."""
        if self._event is not None:
            self._event.set()
            self._event = None

    def add(self, url: str) -> Replica:
        """Add a replica by base URL (idempotent: an existing id is returned unchanged)."""
        rid = replica_id(url)
        if rid not in self.replicas:
            self.replicas[rid] = Replica(id=rid, url=url.rstrip("/"))
            self.notify()
        return self.replicas[rid]

    def remove(self, rid: str) -> bool:
        """Remove a replica; False if unknown."""
        return self.replicas.pop(rid, None) is not None

    def drain(self, rid: str, draining: bool = True) -> Replica | None:
        """Stop (or, with `draining=False`, resume) routing new requests to a replica; None if unknown."""
        replica = self.replicas.get(rid)
        if replica is not None:
            replica.draining = draining
            if not draining:
                self.notify()
        return replica

    def list_replicas(self) -> list[Replica]:
        """Every replica, in insertion order."""
        return list(self.replicas.values())

    def get(self, rid: str) -> Replica | None:
        """The replica with this id, or None."""
        return self.replicas.get(rid)

    def routable(self) -> list[Replica]:
        """Replicas a new request may go to now."""
        return [r for r in self.replicas.values() if r.routable]

    def record_success(self, replica: Replica, probe: bool = False) -> None:
        """A request (or, with `probe`, a health check) succeeded.

        A request success closes the breaker. A probe success closes a closed/half-open breaker's failure
        count, moves an open breaker past its cooldown to half-open, and closes a half-open one.
        """
        replica.consecutive_failures = 0
        if replica.breaker == BreakerState.OPEN:
            if probe and time.monotonic() - replica.opened_at < self.cooldown_s:
                return
            replica.breaker = BreakerState.HALF_OPEN if probe else BreakerState.CLOSED
        elif replica.breaker == BreakerState.HALF_OPEN:
            replica.breaker = BreakerState.CLOSED
        else:
            return
        self.notify()

    def record_failure(self, replica: Replica) -> None:
        """A request or health check failed: a half-open breaker opens again at once, a closed one after
        `unhealthy_after` failures in a row."""
        replica.consecutive_failures += 1
        if replica.breaker == BreakerState.HALF_OPEN or (
                replica.breaker == BreakerState.CLOSED and replica.consecutive_failures >= self.unhealthy_after):
            replica.breaker = BreakerState.OPEN
            replica.opened_at = time.monotonic()
        elif replica.breaker == BreakerState.OPEN:
            replica.opened_at = time.monotonic()

    def set_version(self, replica: Replica, version: str | None) -> None:
        """Record the version a replica serves (from an response header or a confirmed reload)."""
        if version and version != replica.model_version:
            replica.model_version = version
            self.notify()
