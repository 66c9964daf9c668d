"""The `kubernetes` provider's pod lifecycle through the official client over HTTP (see conftest:
the stand-in API server by default, a real cluster with KUBECONFIG): per-rollout pods, readiness by
watch, Kubernetes failure reasons, caps, the reaper."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import redis

from common import keys
from common.env_client import DesktopEnvClient, EnvError
from common.polling import wait_until
from common.status import RolloutStatus
from services.runner.envs import EnvRequest, EnvUnavailable
from services.runner.envs.kubernetes.keeper import PoolKeeper
from tests.k8s.conftest import Cluster, make_provider


def _request(owner: str = "run-1:task-a:0#1") -> EnvRequest:
    run_id, rollout = owner.split(":", 1)[0], owner.split("#")[0]
    return EnvRequest(owner=owner, run_id=run_id, rollout_id=rollout)


def test_per_rollout_pod_is_created_labelled_watched_to_ready_and_deleted(
        cluster: Cluster, redis_url: str, pool_name: str) -> None:
    if cluster.store is not None:
        cluster.store.schedule_delay_s = 0.5  # the pod stays Pending a while: readiness must wait for it
    provider = make_provider(cluster, redis_url, cluster.template(), pool_name)
    started = time.monotonic()
    try:
        lease = provider.acquire(_request(), wait_s=30)
    finally:
        if cluster.store is not None:
            cluster.store.schedule_delay_s = 0.0
    assert time.monotonic() - started >= (0.5 if cluster.store is not None else 0.0)
    pod = cluster.api.read_namespaced_pod(lease.env.env_id, cluster.namespace)
    labels = pod.metadata.labels
    assert labels["app"] == "cua-env" and labels["cua-rollout/run-id"] == "run-1"
    assert labels["cua-rollout/rollout-id"] == "run-1-task-a-0"  # ':' is not allowed in label values
    assert labels["cua-rollout/lease-owner"] == "run-1-task-a-0-1"
    assert pod.metadata.annotations["cua-rollout/lease-owner"] == "run-1:task-a:0#1"
    assert lease.env.url == f"http://{pod.status.pod_ip}:5000" and lease.env.dedicated
    assert httpx.get(f"{lease.env.url}/healthz", timeout=5).status_code == 200  # a real env behind the pod
    pool = provider.pool
    assert pool.lease_owner(lease.env.env_id) == "run-1:task-a:0#1"
    assert pool.try_lease("someone-else", 1000) is None  # a dedicated pod is never leased from the pool
    with DesktopEnvClient(lease.env.url) as env:
        provider.prepare(lease, env)
        assert env.screen_size() == (1920, 1080)
        provider.release(lease, env)
    assert pool.envs() == [] and pool.lease_owner(lease.env.env_id) is None
    wait_until(lambda: not cluster.pods(pool_name), 30, "the pod to be deleted")


def test_image_pull_failure_is_env_init_failed_with_the_reason(
        cluster: Cluster, redis_url: str, pool_name: str) -> None:
    provider = make_provider(cluster, redis_url, cluster.template(image="registry.invalid/no-such-image:1"),
                             pool_name, ready_timeout_s=120)
    with pytest.raises(EnvUnavailable) as raised:
        provider.acquire(_request(), wait_s=30)
    assert raised.value.status is RolloutStatus.ENV_INIT_FAILED
    assert "ImagePullBackOff" in str(raised.value) or "ErrImagePull" in str(raised.value)
    wait_until(lambda: not cluster.pods(pool_name), 30, "the failed pod to be deleted")
    assert redis.Redis.from_url(redis_url).keys("cua:env:*") == []  # lease freed, nothing registered


def test_unschedulable_pod_fails_at_the_deadline_naming_the_reason(
        cluster: Cluster, redis_url: str, pool_name: str) -> None:
    template = cluster.template(node_selector={"cua-rollout/no-such-node": "true"})
    provider = make_provider(cluster, redis_url, template, pool_name, ready_timeout_s=3)
    with pytest.raises(EnvUnavailable, match="still not Ready after 3s.*Unschedulable"):
        provider.acquire(_request(), wait_s=30)
    wait_until(lambda: not cluster.pods(pool_name), 30, "the pending pod to be deleted")


def test_namespace_pod_cap_and_creation_rate_cap(cluster: Cluster, redis_url: str, pool_name: str) -> None:
    template = cluster.template(image="registry.invalid/never-pulled:1")  # pods that never start: cheap
    provider = make_provider(cluster, redis_url, template, pool_name, max_pods=1, creates_per_s=50.0)
    provider.create_pod(f"cua-env-cap-{pool_name}", "per-rollout")
    try:
        assert "cap RUNNER_K8S_MAX_PODS=1" in (provider.caps.try_slot() or "")
        with pytest.raises(EnvUnavailable, match="no env pod created within 1s.*MAX_PODS=1"):
            provider.acquire(_request(), wait_s=1)
    finally:
        cluster.delete_all(pool_name)
    slow = make_provider(cluster, redis_url, template, pool_name, creates_per_s=0.05)
    answers = [slow.caps.try_slot() for _ in range(3)]  # one creation per 20 s window: 3 calls span <= 2
    assert 1 <= answers.count(None) <= 2, answers
    assert all("RUNNER_K8S_CREATES_PER_S=0.05" in a for a in answers if a is not None)


def test_reaper_deletes_pods_whose_lease_expired_and_keeps_leased_ones(
        cluster: Cluster, redis_url: str, pool_name: str) -> None:
    provider = make_provider(cluster, redis_url, cluster.template(image="registry.invalid/never-pulled:1"),
                             pool_name)
    client = redis.Redis.from_url(redis_url)
    # A pod whose owner died: its lease expired (deleted here, as the TTL would).
    provider.pool.claim("cua-env-orphan", "dead-owner#1", 60_000)
    provider.create_pod("cua-env-orphan", "per-rollout", _request())
    # A pod still leased by a live owner: kept.
    provider.pool.claim("cua-env-kept", "live-owner#2", 60_000)
    provider.create_pod("cua-env-kept", "per-rollout", _request())
    # A registry entry whose pod is gone.
    provider.pool.register("http://127.0.0.1:1", provider.name, env_id="cua-env-vanished")
    provider.pool.register("http://127.0.0.1:2", "kubernetes:cua-envs/another-pool", env_id="cua-env-not-ours")
    client.delete(keys.env_lease("cua-env-orphan"))
    keeper = PoolKeeper(provider)
    keeper.tick()
    assert keeper.leading and client.get(keys.k8s_pool_manager(cluster.namespace, pool_name)) == \
        provider.cfg.runner_id.encode()
    follower = PoolKeeper(make_provider(cluster, redis_url, cluster.template(), pool_name, runner_id="other"))
    follower.tick()
    assert not follower.leading  # one leader per pool
    wait_until(lambda: {p.metadata.name for p in cluster.pods(pool_name)} == {"cua-env-kept"}, 30,
               "the reaper to delete the orphan")
    assert [e.env_id for e in provider.pool.envs()] == ["cua-env-not-ours"]  # another pool's env is kept
    cluster.delete_all(pool_name)
    keeper.stop()
    assert not client.exists(keys.k8s_pool_manager(cluster.namespace, pool_name))


def test_eviction_and_node_failures_mid_lease_are_explained_with_the_kubernetes_reason(
        cluster: Cluster, redis_url: str, pool_name: str) -> None:
    provider = make_provider(cluster, redis_url, cluster.template(), pool_name)
    count = 3 if cluster.kubelet is not None else 1  # OOM kill and node pressure: stand-in knobs only
    with ThreadPoolExecutor(count) as starting:
        leases = list(starting.map(lambda i: provider.acquire(_request(f"r:t:{i}#1"), wait_s=60), range(count)))
    cluster.evict(leases[0].env.env_id)
    if cluster.kubelet is not None:
        cluster.kubelet.oom_kill(cluster.namespace, leases[1].env.env_id)
        cluster.kubelet.node_pressure_evict(cluster.namespace, leases[2].env.env_id)
    expected = ["EvictionByEvictionAPI", "OOMKilled", "phase Failed: Evicted"][:count]
    for lease, reason in zip(leases, expected, strict=True):
        explained = wait_until(lambda lease=lease: provider.explain(lease), 30, f"the {reason} reason")
        assert reason in explained and lease.env.env_id in explained, explained
        with DesktopEnvClient(lease.env.url) as env:
            def gone(env: DesktopEnvClient = env) -> bool:
                try:
                    env.screen_size()
                except EnvError:
                    return True
                return False

            # the status says why at once; the kubelet stops the pod's process right after
            wait_until(gone, 30, "the failed pod's env to stop answering")
            provider.release(lease, env)
    wait_until(lambda: not cluster.pods(pool_name), 30, "every failed pod to be deleted")
