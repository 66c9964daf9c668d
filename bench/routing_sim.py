"""Routing simulation: prefix-cache hit rate and load balance of three routing policies under churn.

Simulated (no HTTP): `replicas` replicas, each with a prefix cache that is an LRU of episode ids holding
`cache_factor * episodes / replicas` episodes; `episodes` concurrent episodes of 10-30 steps, each replaced by
a new one when it ends; every round each live episode sends one request. Churn: every `churn_every` rounds a
replica is removed, and it comes back `churn_every // 2` rounds later.

A request hits when its episode is in the cache of the replica it is routed to (the first request of an
episode always misses). Load of a replica = live episodes whose last request went there; max/mean is sampled
every round and averaged.

Policies:
- `consistent-bounded` (the gateway's default): the gateway's own `ConsistentRouter` over a `ReplicaPool`
  (consistent hashing with bounded loads, Mirrokni et al. 2018), pins expiring after `ttl_rounds` rounds.
- `least-in-flight`: each request to the replica with the fewest requests in the last `window` requests.
- `round-robin`: each request to the next replica.
Prints one line per policy, side by side. Target for the default: hit >= 90 %, max/mean <= 1.25.
"""

from __future__ import annotations

import random
import statistics
import sys
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.model_gateway.replicas import ReplicaPool  # noqa: E402
from services.model_gateway.routing import ConsistentRouter  # noqa: E402


@dataclass
class Result:
    """One policy's figures: hit rate (0..1), mean and worst max/mean load, requests simulated."""

    policy: str
    hit_rate: float
    load_ratio: float
    worst_ratio: float
    requests: int


class Policy:
    """A routing policy over the currently present replica ids."""

    name = "?"

    def route(self, key: str, present: list[str]) -> str:
        """The replica id for this request."""
        raise NotImplementedError

    def tick(self) -> None:
        """One round passed."""


class RoundRobin(Policy):
    name = "round-robin"

    def __init__(self) -> None:
        self.next = 0

    def route(self, key: str, present: list[str]) -> str:
        self.next += 1
        return present[self.next % len(present)]


class LeastInFlight(Policy):
    name = "least-in-flight"

    def __init__(self, window: int) -> None:
        self.recent: deque[str] = deque(maxlen=window)
        self.counts: dict[str, int] = {}

    def route(self, key: str, present: list[str]) -> str:
        choice = min(present, key=lambda r: (self.counts.get(r, 0), r))
        if len(self.recent) == self.recent.maxlen:
            old = self.recent[0]
            self.counts[old] -= 1
        self.recent.append(choice)
        self.counts[choice] = self.counts.get(choice, 0) + 1
        return choice


class ConsistentBounded(Policy):
    name = "consistent-bounded (default)"

    def __init__(self, replicas: list[str], ttl_rounds: float, epsilon: float) -> None:
        self.now = 0.0
        self.pool = ReplicaPool.of([f"http://{r}" for r in replicas], unhealthy_after=3)
        self.router = ConsistentRouter(self.pool, ttl_s=ttl_rounds, max_sessions=1_000_000, epsilon=epsilon,
                                       clock=lambda: self.now)

    def sync(self, present: list[str]) -> None:
        """Make the pool's replicas the present ones (removal and re-adding, as the admin API does)."""
        ids = {f"{r}:80" for r in present}
        for rid in list(self.pool.replicas):
            if rid not in ids:
                self.pool.remove(rid)
        for r in present:
            if f"{r}:80" not in self.pool.replicas:
                self.pool.add(f"http://{r}")

    def route(self, key: str, present: list[str]) -> str:
        replica, _ = self.router.route(key)
        assert replica is not None
        return replica.id.removesuffix(":80")

    def tick(self) -> None:
        self.now += 1.0


def simulate(make: Callable[[list[str]], Policy], replicas: int = 8, episodes: int = 1000, rounds: int = 120,
             cache_factor: float = 1.3, churn_every: int = 30, seed: int = 7) -> Result:
    """Run one policy; see the module docstring."""
    rng = random.Random(seed)
    names = [f"r{i}" for i in range(replicas)]
    policy = make(names)
    capacity = int(cache_factor * episodes / replicas)
    caches: dict[str, OrderedDict[str, None]] = {n: OrderedDict() for n in names}
    counter = 0

    def new_episode() -> tuple[str, int]:
        nonlocal counter
        counter += 1
        return f"ep-{counter}", rng.randint(10, 30)

    live = [new_episode() for _ in range(episodes)]
    where: dict[str, str] = {}
    present = list(names)
    removed: str | None = None
    hits = requests = 0
    ratios: list[float] = []
    for round_no in range(rounds):
        if round_no and round_no % churn_every == 0 and removed is None:
            removed = rng.choice(present)
            present.remove(removed)
            caches[removed].clear()  # a restarted replica starts cold
        elif removed is not None and round_no % churn_every == churn_every // 2:
            present.append(removed)
            present.sort()
            removed = None
        if isinstance(policy, ConsistentBounded):
            policy.sync(present)
        order = list(range(len(live)))
        rng.shuffle(order)
        for i in order:
            key, steps_left = live[i]
            target = policy.route(key, present)
            cache = caches[target]
            requests += 1
            if key in cache:
                hits += 1
                cache.move_to_end(key)
            else:
                cache[key] = None
                if len(cache) > capacity:
                    cache.popitem(last=False)
            where[key] = target
            if steps_left <= 1:
                where.pop(key, None)
                live[i] = new_episode()
            else:
                live[i] = (key, steps_left - 1)
        policy.tick()
        loads = {r: 0 for r in present}
        for key, _ in live:
            if where.get(key) in loads:
                loads[where[key]] += 1
        mean = statistics.mean(loads.values())
        if mean:
            ratios.append(max(loads.values()) / mean)
    return Result(policy.name, hits / requests, statistics.mean(ratios), max(ratios), requests)


def main() -> list[Result]:
    """Simulate the three policies with the same seed and print them side by side."""
    results = [
        simulate(lambda names: ConsistentBounded(names, ttl_rounds=3, epsilon=0.25)),
        simulate(lambda names: LeastInFlight(window=64)),
        simulate(lambda names: RoundRobin()),
    ]
    print("8 replicas, 1000 concurrent episodes of 10-30 steps, replica churn every 30 rounds, "
          "prefix cache 1.3x the fair share")
    print(f"{'policy':30} {'hit rate':>9} {'max/mean':>9} {'worst':>7} {'requests':>9}")
    for r in results:
        print(f"{r.policy:30} {r.hit_rate:8.1%} {r.load_ratio:9.3f} {r.worst_ratio:7.3f} {r.requests:9d}")
    default = results[0]
    verdict = "meets" if default.hit_rate >= 0.90 and default.load_ratio <= 1.25 else "MISSES"
    print(f"default {verdict} the target (hit >= 90 %, max/mean <= 1.25)")
    return results


if __name__ == "__main__":
    main()
