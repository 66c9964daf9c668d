"""The cluster the `kubernetes` provider tests run against.

Without `KUBECONFIG` (the default here and in CI): the in-test stand-in for the Kubernetes API
server (`tests.k8s.apiserver`, real HTTP; no API server can run here) whose kubelet runs each pod
as a real local `desktop_env` process. With `KUBECONFIG` set: that real cluster (kind, k3s), in
namespace `CUA_K8S_TEST_NAMESPACE` (default `cua-envs-test`, must exist, the caller may create,
list, watch, delete and evict pods there), with the env images `CUA_K8S_ENV_IMAGE` (our desktop env
image, default `cua-rollout/desktop-env:latest`) and `CUA_K8S_OSWORLD_IMAGE` (a server speaking
only OSWorld's protocol on :5000); the test machine must reach pod IPs (run the tests in a pod, or
route the pod network). The few checks that need a node-side failure knob (OOM kill, node-pressure
eviction) run only on the stand-in.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from kubernetes import client, config

from common.envpool import EnvPool
from services.runner.envs.kubernetes import KubeConfig, KubernetesProvider
from services.runner.envs.kubernetes.podspec import APP_LABEL, MANAGED_BY
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.k8s.apiserver import PodStore, StandInApiServer
from tests.k8s.kubelet import Kubelet
from tests.servers import serve_app

REAL_CLUSTER = bool(os.environ.get("KUBECONFIG"))
ROOT = Path(__file__).resolve().parents[2]
#: A scripted task that never finishes on its own: an episode long enough to break mid-way.
IDLE = {"instruction": "Keep pressing shift", "replies": ["Thought: again\nAction: press(key='shift')"] * 12}


@dataclass
class Cluster:
    """Where env pods run: `kubeconfig` file, `namespace`, a `CoreV1Api`, the env images; `store`
    and `kubelet` are the stand-in's (None on a real cluster)."""

    kubeconfig: Path
    namespace: str
    api: client.CoreV1Api
    env_image: str
    osworld_image: str
    work_dir: Path
    store: PodStore | None = None
    kubelet: Kubelet | None = None

    def template(self, flavor: str = "desktop_env", image: str | None = None,
                 node_selector: dict[str, str] | None = None, request_log: Path | None = None) -> Path:
        """A pod template file: our env (readiness `GET /healthz`) or the OSWorld-only server
        (readiness by TCP: it has no health route; it logs requests to `request_log`), port `http` 5000."""
        osworld = flavor == "osworld_vm"
        probe: dict[str, Any] = ({"tcpSocket": {"port": 5000}} if osworld
                                 else {"httpGet": {"path": "/healthz", "port": 5000}})
        spec: dict[str, Any] = {"containers": [{
            "name": "env", "image": image or (self.osworld_image if osworld else self.env_image),
            "ports": [{"name": "http", "containerPort": 5000}],
            "readinessProbe": {**probe, "periodSeconds": 1},
        }]}
        if request_log is not None:
            spec["containers"][0]["env"] = [{"name": "OSWORLD_REQUEST_LOG", "value": str(request_log)}]
        if node_selector:
            spec["nodeSelector"] = node_selector
        path = self.work_dir / f"template-{secrets.token_hex(4)}.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"app": "cua-env"}},
                                        "spec": spec}))
        return path

    def pods(self, pool: str | None = None, include_terminating: bool = True) -> list[Any]:
        """Our env pods in the namespace (of `pool` when given)."""
        selector = f"{APP_LABEL[0]}={APP_LABEL[1]},{MANAGED_BY[0]}={MANAGED_BY[1]}"
        if pool:
            selector += f",cua-rollout/pool={pool}"
        items = self.api.list_namespaced_pod(self.namespace, label_selector=selector).items
        return [p for p in items if include_terminating or p.metadata.deletion_timestamp is None]

    def evict(self, name: str) -> None:
        """Evict a pod through the eviction API (as `kubectl drain` does)."""
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=self.namespace))
        self.api.create_namespaced_pod_eviction(name, self.namespace, body)

    def delete_all(self, pool: str | None = None) -> None:
        """Delete our env pods (test teardown)."""
        for pod in self.pods(pool):
            try:
                self.api.delete_namespaced_pod(pod.metadata.name, self.namespace, grace_period_seconds=0)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The stand-in (default) or the real cluster of `KUBECONFIG` (see the module docstring)."""
    work_dir = tmp_path_factory.mktemp("k8s")
    if REAL_CLUSTER:
        kubeconfig = Path(os.environ["KUBECONFIG"])
        api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        yield Cluster(kubeconfig, os.environ.get("CUA_K8S_TEST_NAMESPACE", "cua-envs-test"), api,
                      os.environ.get("CUA_K8S_ENV_IMAGE", "cua-rollout/desktop-env:latest"),
                      os.environ.get("CUA_K8S_OSWORLD_IMAGE", "cua-rollout/osworld-only:latest"), work_dir)
        return
    store = PodStore()
    kubelet = Kubelet(store, work_dir / "pods")
    server = StandInApiServer(store)
    with server.running():
        kubeconfig = server.write_kubeconfig(work_dir / "kubeconfig", "cua-envs")
        api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        try:
            yield Cluster(kubeconfig, "cua-envs", api, "cua-rollout/desktop-env:test", "osworld/vm-server:test",
                          work_dir, store, kubelet)
        finally:
            kubelet.stop_all()


@pytest.fixture()
def pool_name() -> str:
    """A pool name of this test alone (its pods are told apart by the `cua-rollout/pool` label)."""
    return f"t{secrets.token_hex(3)}"


def kube_config(cluster: Cluster, template: Path, pool: str, **overrides: Any) -> KubeConfig:
    """The provider's settings for a test, short deadlines unless overridden."""
    values: dict[str, Any] = dict(namespace=cluster.namespace, template=template, mode="per-rollout", pool=pool,
                                  pool_size=2, ready_timeout_s=60.0, max_pods=20, creates_per_s=50.0,
                                  upkeep_interval_s=0.5, flavor="desktop_env", env_port=5000,
                                  runner_id=f"test-runner-{pool}")
    values.update(overrides)
    return KubeConfig(**values)


def make_provider(cluster: Cluster, redis_url: str, template: Path, pool: str, lease_ttl_ms: int = 10_000,
                  **overrides: Any) -> KubernetesProvider:
    """A provider on `cluster` through the real client, its registry in the test's Redis."""
    redis_client = redis.Redis.from_url(redis_url)
    return KubernetesProvider(EnvPool(redis_client), lease_ttl_ms, redis_client,
                              kube_config(cluster, template, pool, **overrides), api=cluster.api)


@pytest.fixture(scope="session")
def policy_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The scripted policy (the vLLM stand-in: no GPU here) over HTTP, with the examples' scripts
    and `IDLE`."""
    scripts = tmp_path_factory.mktemp("scripts")
    shutil.copytree(ROOT / "examples" / "scripts", scripts, dirs_exist_ok=True)
    (scripts / "idle.json").write_text(json.dumps(IDLE))
    with serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts))) as url:
        yield url
