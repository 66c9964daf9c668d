"""A whole rollout against a server that speaks ONLY OSWorld's VM server protocol (`osworld_vm`
flavor: no `/reset`, no `/healthz`): the runner never calls an endpoint the flavor lacks, and a used
env of that flavor is replaced, never reused in place.

The server is our desktop env with the non-OSWorld routes removed (`tests.k8s.osworld_only`), run as
a pod by the stand-in's kubelet (or as `CUA_K8S_OSWORLD_IMAGE` on a real cluster); the policy is the
scripted policy over HTTP (the vLLM stand-in: no GPU here); Redis is a real redis-server.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import redis

from common import keys
from common.env_client import DesktopEnvClient
from common.envpool import EnvPool
from common.polling import wait_until
from common.run import RolloutJob, SamplingParams
from common.status import RolloutStatus
from common.task import load_task_file
from services.runner.envs import EnvRequest
from services.runner.envs.kubernetes.keeper import PoolKeeper
from services.runner.envs.static import StaticProvider
from services.runner.rollout import RolloutRunner
from services.runner.settings import RunnerSettings
from tests.k8s.conftest import Cluster, make_provider

ROOT = Path(__file__).resolve().parents[2]
TASK = "os-make-notes-dir"


def _job(run_id: str) -> RolloutJob:
    task = load_task_file(next((ROOT / "examples" / "tasks").rglob(f"{TASK}.json")))
    return RolloutJob(run_id=run_id, task=task, rollout_index=0, max_steps=10, agent="ui_tars_1_5",
                      model="ui-tars-1.5-7b", sampling=SamplingParams())


def test_a_rollout_on_an_osworld_only_server_never_calls_reset_or_healthz(
        cluster: Cluster, redis_url: str, pool_name: str, policy_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    request_log = tmp_path / "requests.log"
    template = cluster.template("osworld_vm", request_log=request_log)
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    settings = RunnerSettings(redis_url=redis_url, gateway_url=policy_url, env_provider="kubernetes",
                              env_flavor="osworld_vm", k8s_namespace=cluster.namespace, k8s_pod_template=template,
                              k8s_mode="per-rollout", k8s_pool=pool_name, k8s_ready_timeout_s=60,
                              cache_dir=tmp_path / "cache", wait_action_s=0.5, lease_wait_s=30, id="flavor-runner")
    client = redis.Redis.from_url(redis_url)
    outcome = RolloutRunner(client, settings).run(_job("osworld-run"), attempt=1, final_attempt=True)
    assert (outcome.status, outcome.reward) == (RolloutStatus.COMPLETED, 1.0), outcome.error
    if cluster.kubelet is not None:  # the stand-in's pods write the request log on this machine
        calls = request_log.read_text().splitlines()
        assert "POST /execute" in calls and "GET /screenshot" in calls  # it really drove this server
        paths = {line.split()[1] for line in calls}
        assert not paths & {"/reset", "/healthz", "/metrics"}, calls
    assert EnvPool(client).envs() == []
    wait_until(lambda: not cluster.pods(pool_name), 30, "the used osworld_vm pod to be deleted")


def test_a_used_osworld_vm_warm_pod_abandoned_by_its_owner_is_replaced_and_a_static_one_retired(
        cluster: Cluster, redis_url: str, pool_name: str, tmp_path: Path) -> None:
    provider = make_provider(cluster, redis_url, cluster.template("osworld_vm"), pool_name, mode="warm-pool",
                             pool_size=1, flavor="osworld_vm")
    keeper = PoolKeeper(provider)
    try:
        keeper.tick()
        wait_until(lambda: provider.pool.envs(), 60, "the warm osworld_vm pod to be registered")
        lease = provider.acquire(EnvRequest("r:t:0#1", "r", "r:t:0"), wait_s=5)
        assert lease.env.flavor == "osworld_vm" and lease.env.dedicated
        first = lease.env.env_id
        assert provider.pool.try_lease("another#1", 1000) is None  # used from now on: never leased again
        with httpx.Client() as http:
            assert http.get(f"{lease.env.url}/healthz").status_code == 404  # OSWorld's server has none
        with DesktopEnvClient(lease.env.url) as env:
            provider.prepare(lease, env)  # no /reset call: a fresh pod is clean
        redis.Redis.from_url(redis_url).delete(keys.env_lease(first))  # its owner died mid-episode

        def replaced() -> bool:
            keeper.tick()
            names = {p.metadata.name for p in cluster.pods(pool_name, include_terminating=False)}
            return first not in names and len(names) == 1

        wait_until(replaced, 30, "a fresh warm pod to replace the used one", interval_s=0.3)
    finally:
        keeper.stop()
        cluster.delete_all(pool_name)
    # The static provider cannot replace a VM: a used osworld_vm env is retired (never reused dirty).
    pool = EnvPool(redis.Redis.from_url(redis_url))
    static = StaticProvider(pool, 10_000, ["http://127.0.0.1:5999"], "osworld_vm", resolve_interval_s=0)
    static.start()
    lease = static.acquire(EnvRequest("s#1", "s", "s"), wait_s=1)
    static.release(lease, _NoCallsEnv())  # type: ignore[arg-type]
    assert pool.status().unhealthy == 1 and pool.try_lease("next#1", 1000) is None


class _NoCallsEnv:
    """An env client that fails on any call: releasing an `osworld_vm` env must not call the env."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"release called env.{name} on an osworld_vm env")
