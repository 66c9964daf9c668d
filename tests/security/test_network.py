"""Issue 34 attack 2: code in an env pod reaches the control plane. The env pods reach nothing but what they
must: in docker-compose.yml the desktops are on a network of their own that only the runners join (the attack
itself, Python sent to a desktop's `/execute` and `/run_python` trying every service, runs in `make compose-test`:
tests/e2e/compose/attack.py); in Kubernetes the NetworkPolicies (evaluated by tests/deploy/netpolicy.py) let an
env pod open no connection to any control-plane port, and only runners open one to an env pod."""

from __future__ import annotations

import pytest

from tests.deploy.netpolicy import Endpoint, Network
from tests.deploy.test_compose import _config
from tests.deploy.test_k8s_manifests import ENV_POD, OVERLAYS, SERVICES, _pod, docs

#: Every port a control-plane pod serves (Redis, MinIO and its console, gateway/model server, producer, the
#: runners' and the sink's metrics).
CONTROL_PORTS = [6379, 9000, 9001, 8000, 8080, 9101, 9102]


def test_compose_desktops_share_a_network_with_the_runners_only() -> None:
    services = _config()["services"]
    networks = {name: set(s.get("networks") or {"default"}) for name, s in services.items()}
    assert networks["desktop_env"] == {"envs"}
    assert {name for name, nets in networks.items() if "envs" in nets} == {"desktop_env", "runner"}
    for name in ("redis", "minio", "producer", "gateway", "sink"):
        assert "envs" not in networks[name] and networks[name] <= {"control", "models"}, (name, networks[name])
    assert networks["redis"] == {"control"} and "ports" not in services["redis"]
    assert networks["policy"] == {"models"}  # replicas: only the gateway


def test_compose_with_the_gpu_profile_keeps_vllm_off_the_env_network() -> None:
    services = _config("gpu")["services"]
    assert set(services["vllm"]["networks"]) == {"models"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_an_env_pod_opens_no_connection_to_the_control_plane(overlay: str) -> None:
    net = Network(docs(overlay), extra_namespaces={"keda": {}, "kube-system": {}, "monitoring": {}})
    reached = [(c, port) for c in SERVICES for port in CONTROL_PORTS if net.allowed(ENV_POD, _pod(c), port)]
    assert reached == []
    # the evaluator does allow what the manifests allow: a runner reaches Redis and the env's server
    assert net.allowed(_pod("runner"), _pod("redis"), 6379) and net.allowed(_pod("runner"), ENV_POD, 5000)
    assert not net.allowed(Endpoint("cua-envs", {"app": "cua-env"}), ENV_POD, 5000)  # nor another env
    # out of the cluster: web pages yes (task setups), private addresses and the cloud's metadata service no
    assert net.allowed(ENV_POD, Endpoint(ip="93.184.216.34"), 443)
    for private in ("10.96.0.10", "172.20.0.5", "192.168.1.1", "169.254.169.254"):
        assert not net.allowed(ENV_POD, Endpoint(ip=private), 80), private
