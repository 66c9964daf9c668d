"""Env providers behind one interface (`services/runner/envs`): which one settings pick, the
`static` provider's DNS re-resolution (replicas behind a name that come and go), the `local` one."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from pydantic import ValidationError

from common.envpool import EnvPool
from services.runner.envs import make_provider
from services.runner.envs.kubernetes import KubernetesProvider
from services.runner.envs.local import LocalProvider
from services.runner.envs.static import StaticProvider
from services.runner.settings import RunnerSettings


class Names:
    """A stand-in for compose's embedded DNS (no DNS server can be started and repointed here):
    name -> addresses, changed by the test as replicas come and go."""

    def __init__(self) -> None:
        self.table: dict[str, list[str]] = {}

    def __call__(self, host: str, port: int) -> list[str]:
        return sorted(self.table.get(host, []))


def test_settings_pick_the_provider_and_reject_unknown_values(redis_url: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    client = redis.Redis.from_url(redis_url)
    static = make_provider(RunnerSettings(redis_url=redis_url, env_urls="http://127.0.0.1:5000"), client)
    assert isinstance(static, StaticProvider)
    assert isinstance(make_provider(RunnerSettings(env_provider="local"), client), LocalProvider)
    template = tmp_path / "pod.yaml"
    template.write_text("spec:\n  containers:\n  - name: env\n    image: env:1\n    ports: [{containerPort: 5000}]\n")
    kube = make_provider(RunnerSettings(env_provider="kubernetes", k8s_pod_template=template), client)
    assert isinstance(kube, KubernetesProvider) and kube.template.port == 5000  # not static in disguise
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(RuntimeError, match="RUNNER_ENV_PROVIDER=kubernetes needs KUBECONFIG"):
        kube.start()
    with pytest.raises(ValueError, match="pod template .*missing.yaml: cannot read it"):
        make_provider(RunnerSettings(env_provider="kubernetes", k8s_pod_template=tmp_path / "missing.yaml"), client)
    template.write_text("spec: {}\n")
    with pytest.raises(ValueError, match="spec.containers must list at least one container"):
        make_provider(RunnerSettings(env_provider="kubernetes", k8s_pod_template=template), client)
    with pytest.raises(ValidationError, match="unknown env flavor 'vmware'"):
        RunnerSettings(env_flavor="vmware")
    with pytest.raises(ValidationError, match="RUNNER_K8S_MODE must be per-rollout or warm-pool"):
        RunnerSettings(k8s_mode="sometimes")


def test_static_names_are_re_resolved_as_replicas_come_and_go(redis_url: str) -> None:
    pool = EnvPool(redis.Redis.from_url(redis_url))
    names = Names()
    provider = StaticProvider(pool, 10_000, ["http://desktop_env:5000", "http://10.9.9.9:5000"], "desktop_env",
                              resolve_interval_s=10, resolver=names)
    assert provider.sync() == (1, 0)  # the name does not resolve yet: only the IP literal
    assert [e.url for e in pool.envs()] == ["http://10.9.9.9:5000"]
    names.table["desktop_env"] = ["172.18.0.5", "172.18.0.4"]
    assert provider.sync() == (2, 0)
    assert [e.url for e in pool.envs()] == ["http://10.9.9.9:5000", "http://172.18.0.4:5000",
                                            "http://172.18.0.5:5000"]
    lease = pool.lease("rollout#1", 10_000, wait_s=1)
    names.table["desktop_env"] = ["172.18.0.5", "172.18.0.6"]  # .4 went away, .6 came
    assert provider.sync() == (1, 1)
    assert [e.url for e in pool.envs()] == ["http://10.9.9.9:5000", "http://172.18.0.5:5000",
                                            "http://172.18.0.6:5000"]
    pool.release(lease)
    assert all(e.provider == "static" and e.flavor == "desktop_env" for e in pool.envs())


def test_a_provider_can_lease_only_its_own_envs(redis_url: str) -> None:
    pool = EnvPool(redis.Redis.from_url(redis_url))
    pool.register("http://10.0.0.1:5000", "static")
    pool.register("http://10.0.0.2:5000", "kubernetes:cua-envs/default", env_id="cua-pool-default-1")
    lease = pool.try_lease("r#1", 10_000, provider="kubernetes:cua-envs/default")
    assert lease is not None and lease.env.env_id == "cua-pool-default-1"
    assert pool.try_lease("r#2", 10_000, provider="kubernetes:cua-envs/default") is None  # the static one is not its
    assert pool.try_lease("r#3", 10_000) is not None  # without a filter any free env goes
