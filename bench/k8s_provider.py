"""The `kubernetes` env provider's latencies, side by side, on the in-test stand-in API server.

No cluster runs here: the stand-in (`tests/k8s/apiserver.py`, real HTTP, watch streams) and its
kubelet (a real local desktop env per pod) stand in for one. Measured through the official client:

1. time to an env: `per-rollout` (create the pod, watch it to Ready, probe `/healthz`) against
   `warm-pool` (lease a ready pod from the registry), and the ratio;
2. orphan reaping: from the moment a leased pod's owner dies (its lease stops being renewed) to the
   pod being deleted by the pool keeper, with a 2 s lease TTL and a 0.5 s upkeep interval.

Run: `python bench/k8s_provider.py` (about a minute on an idle 2-core machine).
"""

from __future__ import annotations

import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis  # noqa: E402
from kubernetes import client, config  # noqa: E402

from common import keys  # noqa: E402
from common.env_client import DesktopEnvClient  # noqa: E402
from common.polling import wait_until  # noqa: E402
from common.redis_server import RedisServerProcess  # noqa: E402
from services.runner.envs import EnvRequest  # noqa: E402
from services.runner.envs.kubernetes.keeper import PoolKeeper  # noqa: E402
from tests.k8s.apiserver import PodStore, StandInApiServer  # noqa: E402
from tests.k8s.conftest import Cluster, make_provider  # noqa: E402
from tests.k8s.kubelet import Kubelet  # noqa: E402

ROUNDS = 3


def _time_to_env(cluster: Cluster, redis_url: str, mode: str) -> list[float]:
    pool = f"b{secrets.token_hex(3)}"
    provider = make_provider(cluster, redis_url, cluster.template(), pool, mode=mode, pool_size=1)
    keeper = PoolKeeper(provider) if mode == "warm-pool" else None
    if keeper is not None:
        keeper.start()
    times: list[float] = []
    try:
        for i in range(ROUNDS):
            if keeper is not None:
                wait_until(lambda: provider.pool.status().idle >= 1, 120, "a ready warm pod",
                           interval_s=0.05)
            started = time.perf_counter()
            lease = provider.acquire(EnvRequest(f"bench:{i}#1", "bench", f"bench:{i}"), wait_s=120)
            times.append(time.perf_counter() - started)
            with DesktopEnvClient(lease.env.url) as env:
                provider.release(lease, env)
    finally:
        if keeper is not None:
            keeper.stop()
        cluster.delete_all(pool)
    return times


def _reap_latency(cluster: Cluster, redis_url: str) -> float:
    pool = f"b{secrets.token_hex(3)}"
    provider = make_provider(cluster, redis_url, cluster.template(image="registry.invalid/never-pulled:1"), pool,
                             upkeep_interval_s=0.5)
    provider.pool.claim("cua-env-bench-orphan", "dead#1", 2000)  # the owner renews nothing from now on
    provider.create_pod("cua-env-bench-orphan", "per-rollout", EnvRequest("dead#1", "bench", "bench:x"))
    died = time.perf_counter()
    keeper = PoolKeeper(provider)
    keeper.start()
    try:
        wait_until(lambda: not cluster.pods(pool), 60, "the orphan to be reaped", interval_s=0.02)
    finally:
        keeper.stop()
    return time.perf_counter() - died


def main() -> None:
    """Start the stand-in and a redis-server, measure, print the tables."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        redis_server = RedisServerProcess(work / "redis").start()
        store = PodStore()
        kubelet = Kubelet(store, work / "pods")
        server = StandInApiServer(store)
        try:
            with server.running():
                kubeconfig = server.write_kubeconfig(work / "kubeconfig", "cua-envs")
                api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
                cluster = Cluster(kubeconfig, "cua-envs", api, "cua-rollout/desktop-env:test",
                                  "osworld/vm-server:test", work, store, kubelet)
                per_rollout = _time_to_env(cluster, redis_server.url, "per-rollout")
                warm = _time_to_env(cluster, redis_server.url, "warm-pool")
                redis.Redis.from_url(redis_server.url).delete(keys.env_lease("cua-env-bench-orphan"))
                reap = _reap_latency(cluster, redis_server.url)
        finally:
            kubelet.stop_all()
            redis_server.stop()
    p50_cold, p50_warm = statistics.median(per_rollout), statistics.median(warm)
    print(f"| time to an env ({ROUNDS} rounds) | p50 s | max s |")
    print("|---|---|---|")
    print(f"| per-rollout (create, watch to Ready, /healthz) | {p50_cold:.2f} | {max(per_rollout):.2f} |")
    print(f"| warm-pool (lease a ready pod) | {p50_warm:.3f} | {max(warm):.3f} |")
    print(f"| ratio per-rollout / warm-pool | {p50_cold / p50_warm:.0f}x | |")
    print(f"\norphan reaped {reap:.2f} s after its owner died (lease TTL 2 s, upkeep every 0.5 s)")


if __name__ == "__main__":
    main()
