"""Routing: consistent hashing with bounded loads and sticky per-episode pins.

New episodes hash onto a ring of virtual nodes (`vnodes` per replica) and take the first replica clockwise
whose load (pinned episodes) is below `ceil((1 + epsilon) * (total + 1) / n)`: "Consistent Hashing with
Bounded Loads", Mirrokni, Thorup, Zadimoghaddam (SODA 2018). An episode stays pinned to its replica (the
replica's prefix cache holds its conversation) and moves only when that replica is unhealthy, draining,
removed, serves a version the request does not accept, just failed for it, or is overloaded (its load is
above the bound). Adding a replica moves no pinned episode; removing one moves only its own episodes.

Decisions (the `decision` label of the routing metric): `sticky`, `new` (no pin), `migrated` (the pinned
replica cannot serve) and `overload` (moved off an overloaded replica). Requests without a session key go
to the eligible replica with the least load (`Replica.load`: in-flight requests, or its vLLM engine's running +
waiting requests when those are more).

Policy `round_robin` (`GATEWAY_ROUTING`; decision `round_robin`) ignores session keys and sends each request to
the next eligible replica in id order: no pin, no prefix-cache affinity (the baseline of bench/prefix_cache.py).
"""

from __future__ import annotations

import bisect
import hashlib
import math
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal

from services.model_gateway.replicas import Replica, ReplicaPool

# `"user": "<id>"` as a JSON member; `"role": "user"` never matches (no colon follows that `"user"`), and
# inside a JSON string the quotes would be escaped. Bounded length: no backtracking over megabytes.
_USER_FIELD = re.compile(rb'"user"\s*:\s*"([^"\\]{1,256})"')


async def session_key(headers: Mapping[str, str], read_body: Callable[[], Awaitable[bytes]]) -> str | None:
    """`header_session_key`, else `body_session_key` of the body `read_body()` returns: the body is read
    (whole) only when no header names the session."""
    return header_session_key(headers) or body_session_key(await read_body())


def header_session_key(headers: Mapping[str, str]) -> str | None:
    """`X-Episode-Id`, else `X-Session-Id`, else None."""
    for name in ("x-episode-id", "x-session-id"):
        value = headers.get(name)
        if value:
            return value
    return None


def body_session_key(body: bytes) -> str | None:
    """The body's `"user": "<id>"` member, else None: a byte regex, never a JSON parse (the body may be
    megabytes, on the event loop)."""
    if b'"user"' not in body:
        return None
    match = _USER_FIELD.search(body)
    return match.group(1).decode("utf-8", "replace") if match else None


def ring_hash(key: str) -> int:
    """64-bit BLAKE2b hash of `key` (stable across processes, unlike `hash()`)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


Accept = Callable[[Replica], bool]
RoutingPolicy = Literal["sticky", "round_robin"]


class ConsistentRouter:
    """Session -> replica pins over a bounded-load consistent-hash ring.

    Pins form an LRU bounded by `max_sessions` whose entries expire after `ttl_s` seconds unused (an episode
    that stopped calling no longer counts as load). `epsilon` is the load slack: no replica takes a new
    episode while it holds more than `ceil((1 + epsilon) * average)`. `policy`: `sticky`, or `round_robin`
    (module docstring).
    """

    def __init__(self, pool: ReplicaPool, ttl_s: float, max_sessions: int, epsilon: float = 0.25,
                 vnodes: int = 100, clock: Callable[[], float] = time.monotonic,
                 policy: RoutingPolicy = "sticky") -> None:
        self.pool = pool
        self.policy = policy
        self._turn = 0  # round_robin: requests routed so far
        self.ttl_s = ttl_s
        self.max_sessions = max_sessions
        self.epsilon = epsilon
        self.vnodes = vnodes
        self.clock = clock
        self.sessions: OrderedDict[str, tuple[str, float]] = OrderedDict()  # key -> (replica id, last use)
        self._ring_ids: tuple[str, ...] = ()
        self._ring: list[tuple[int, str]] = []
        self._ring_keys: list[int] = []

    # -- the ring ---------------------------------------------------------------------------------
    def _ring_points(self) -> list[tuple[int, str]]:
        ids = tuple(self.pool.replicas)
        if ids != self._ring_ids:
            self._ring = sorted((ring_hash(f"{rid}#{i}"), rid) for rid in ids for i in range(self.vnodes))
            self._ring_keys = [h for h, _ in self._ring]
            self._ring_ids = ids
        return self._ring

    def capacity(self) -> int:
        """Episodes a replica may hold before a new one skips it: ceil((1+eps) * (m+1) / n), m pinned
        episodes, n routable replicas."""
        return math.ceil((1.0 + self.epsilon) * self._average(extra=1))

    def _average(self, extra: int = 0) -> float:
        """Pinned episodes (all of them, also those whose replica left) per routable replica."""
        return (len(self.sessions) + extra) / max(1, len(self.pool.routable()))

    def overloaded(self, replica: Replica, candidates: list[Replica]) -> bool:
        """True when `replica` holds more than ceil((1+eps) * average) episodes (it counts itself)."""
        if len(candidates) <= 1:
            return False
        return replica.sessions > math.ceil((1.0 + self.epsilon) * self._average())

    def hashed(self, key: str, candidates: list[Replica]) -> Replica | None:
        """The first candidate clockwise from `key`'s hash whose load is under the bound."""
        if not candidates:
            return None
        by_id = {r.id: r for r in candidates}
        cap = self.capacity()
        ring = self._ring_points()
        start = bisect.bisect(self._ring_keys, ring_hash(key))
        seen: set[str] = set()
        for i in range(len(ring)):
            rid = ring[(start + i) % len(ring)][1]
            if rid in seen or rid not in by_id:
                continue
            seen.add(rid)
            if by_id[rid].sessions < cap:
                return by_id[rid]
            if len(seen) == len(by_id):
                break
        return min(candidates, key=lambda r: (r.sessions, r.id))

    # -- routing ----------------------------------------------------------------------------------
    def candidates(self, exclude: set[str] | None = None, accept: Accept | None = None) -> list[Replica]:
        """Routable replicas not in `exclude` that `accept` (a version check) lets through."""
        excluded = exclude or set()
        return [r for r in self.pool.routable() if r.id not in excluded and (accept is None or accept(r))]

    def least_loaded(self, exclude: set[str] | None = None, accept: Accept | None = None) -> Replica | None:
        """The eligible replica with the least `load` (then in-flight requests, pinned episodes, id), or None."""
        candidates = self.candidates(exclude, accept)
        return min(candidates, key=lambda r: (r.load, r.in_flight, r.sessions, r.id)) if candidates else None

    def next_in_turn(self, exclude: set[str] | None = None, accept: Accept | None = None) -> Replica | None:
        """Round robin: the next eligible replica in id order, or None."""
        candidates = sorted(self.candidates(exclude, accept), key=lambda r: r.id)
        if not candidates:
            return None
        self._turn += 1
        return candidates[(self._turn - 1) % len(candidates)]

    def route(self, key: str | None, exclude: set[str] | None = None,
              accept: Accept | None = None) -> tuple[Replica | None, str]:
        """Pick a replica for a request with session `key`; returns (replica or None, decision)."""
        if self.policy == "round_robin":
            return self.next_in_turn(exclude, accept), "round_robin"
        if key is None:
            return self.least_loaded(exclude, accept), "new"
        now = self.clock()
        self._expire(now)
        candidates = self.candidates(exclude, accept)
        decision = "new"
        pin = self.sessions.get(key)
        if pin is not None:
            current = next((r for r in candidates if r.id == pin[0]), None)
            if current is not None:
                if not self.overloaded(current, candidates):
                    self.sessions[key] = (current.id, now)
                    self.sessions.move_to_end(key)
                    return current, "sticky"
                decision = "overload"
            else:
                decision = "migrated"
            self._unpin(key)
            candidates = [r for r in candidates if r.id != pin[0]] or candidates
        replica = self.hashed(key, candidates)
        if replica is not None:
            self._pin(key, replica, now)
        return replica, decision

    def forget(self, key: str) -> None:
        """Drop a session's pin (e.g. its replica failed it); its next request is routed anew."""
        self._unpin(key)

    # -- pins -------------------------------------------------------------------------------------
    def _adjust(self, rid: str, delta: int) -> None:
        replica = self.pool.get(rid)
        if replica is not None:
            replica.sessions = max(0, replica.sessions + delta)

    def _unpin(self, key: str) -> None:
        previous = self.sessions.pop(key, None)
        if previous is not None:
            self._adjust(previous[0], -1)

    def _expire(self, now: float) -> None:
        """Drop pins unused for more than `ttl_s` (the LRU order puts the oldest first)."""
        while self.sessions:
            key, (rid, seen) = next(iter(self.sessions.items()))
            if now - seen <= self.ttl_s:
                return
            del self.sessions[key]
            self._adjust(rid, -1)

    def _pin(self, key: str, replica: Replica, now: float) -> None:
        self._unpin(key)
        self.sessions[key] = (replica.id, now)
        replica.sessions += 1
        while len(self.sessions) > self.max_sessions:
            _, (old_rid, _) = self.sessions.popitem(last=False)
            self._adjust(old_rid, -1)
