"""Kubernetes runs the images compose runs, with the same settings where both need them: the effective
environment of each container (its image's `ENV` lines, then what compose or the manifest sets) is compared
for the settings that must agree, so the two deployments cannot drift apart again (issue: the env pod's
runtime dir under /tmp, wiped by every /reset, in both)."""

from __future__ import annotations

import json
import re
import subprocess
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import compose
import pytest

from common.env_file import SECRETS as SECRET_NAMES
from scripts import validate_k8s as vk

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {name: f"test-{name.lower()}" for name in SECRET_NAMES}
#: compose service -> (k8s Deployment name in the dev overlay, or the env pod template)
PAIRS = {"producer": "producer", "gateway": "gateway", "sink": "sink", "runner": "runner", "policy": "policy",
         "desktop_env": "env-pod-template"}
#: Settings whose value must be the same in both deployments, per compose service.
SAME_VALUE = {
    "desktop_env": ["DESKTOP_PORT", "DESKTOP_HOME", "DESKTOP_DISPLAY", "DESKTOP_RUNTIME_DIR", "DESKTOP_XDG_RUNTIME_DIR",
                    "DESKTOP_WIPE_TMP", "DESKTOP_FILE_ROOTS", "HOME", "USER"],
    "runner": ["RUNNER_CACHE_DIR", "RUNNER_METRICS_PORT", "RUNNER_STORE_URL", "PYTHONPATH"],
    "producer": ["PRODUCER_PORT", "STORE_URL", "PYTHONPATH"],
    "gateway": ["GATEWAY_PORT", "PYTHONPATH"],
    "sink": ["STORE_URL", "PYTHONPATH"],
}
#: Settings that must be set (from a secret) in both: the tokens of docker-compose.yml's safe defaults.
SET_IN_BOTH = {
    "runner": ["RUNNER_GATEWAY_API_KEY", "RUNNER_S3_ACCESS_KEY", "RUNNER_S3_SECRET_KEY"],
    "producer": ["PRODUCER_API_TOKEN", "PRODUCER_GATEWAY_URL", "PRODUCER_GATEWAY_ADMIN_TOKEN", "S3_ACCESS_KEY",
                 "S3_SECRET_KEY"],
    "gateway": ["GATEWAY_API_KEYS", "GATEWAY_RUNNER_KEYS", "GATEWAY_ADMIN_TOKEN"],
    "sink": ["S3_ACCESS_KEY", "S3_SECRET_KEY"],
}


def image_env(dockerfile: Path) -> dict[str, str]:
    """The `ENV` settings of a Dockerfile (`ENV A=1 B=2`, continued lines joined), `$PATH`-style references kept."""
    text = re.sub(r"\\\n\s*", " ", dockerfile.read_text())
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            env.update(pair.split("=", 1) for pair in line[4:].split() if "=" in pair)
    return env


@cache
def compose_services() -> dict[str, Any]:
    binary = str(Path(compose.__file__).with_name("docker-compose"))
    done = subprocess.run([binary, "-f", str(ROOT / "docker-compose.yml"),
                           "--env-file", "/dev/null", "config", "--format", "json"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={"PATH": "/usr/bin:/bin", **SECRETS})
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout)["services"])


@cache
def k8s_objects() -> list[dict[str, Any]]:
    return vk.documents(vk.render(vk.K8S_DIR / "overlays" / "dev"))


def _k8s_container(name: str) -> dict[str, Any]:
    if name == "env-pod-template":
        import yaml
        return dict(yaml.safe_load(vk.ENV_POD_TEMPLATE.read_text())["spec"]["containers"][0])
    (obj,) = [o for o in k8s_objects() if o["kind"] == "Deployment" and o["metadata"]["name"] == name]
    return dict(obj["spec"]["template"]["spec"]["containers"][0])


def _dockerfile(service: dict[str, Any]) -> Path:
    image = service["image"]
    return ROOT / "deploy" / "docker" / ("Dockerfile.desktop" if "desktop" in image else "Dockerfile")


def compose_env(name: str) -> dict[str, str]:
    """Effective environment of compose service `name`: its image's ENV, then compose's `environment`."""
    service = compose_services()[name]
    return {**image_env(_dockerfile(service)), **{k: str(v) for k, v in (service.get("environment") or {}).items()}}


def k8s_env(name: str) -> dict[str, str]:
    """Effective environment of the k8s container: the same image's ENV, then the manifest's `env`
    (a Secret reference as `secret:<name>/<key>`, a ConfigMap reference resolved from the rendered ConfigMap)."""
    container = _k8s_container(name)
    compose_name = next(c for c, k in PAIRS.items() if k == name)
    env = image_env(_dockerfile(compose_services()[compose_name]))
    maps = {o["metadata"]["name"]: o.get("data", {}) for o in k8s_objects() if o["kind"] == "ConfigMap"}
    for item in container.get("env", []):
        source = item.get("valueFrom", {})
        if "secretKeyRef" in source:
            env[item["name"]] = f"secret:{source['secretKeyRef']['name']}/{source['secretKeyRef']['key']}"
        elif "configMapKeyRef" in source:
            env[item["name"]] = maps[source["configMapKeyRef"]["name"]][source["configMapKeyRef"]["key"]]
        elif "value" in item:
            env[item["name"]] = str(item["value"])
    return env


@pytest.mark.parametrize("service", sorted(PAIRS))
def test_both_deployments_run_the_same_image(service: str) -> None:
    assert compose_services()[service]["image"] == _k8s_container(PAIRS[service])["image"]


@pytest.mark.parametrize("service", sorted(SAME_VALUE))
def test_settings_both_need_agree(service: str) -> None:
    ours, theirs = compose_env(service), k8s_env(PAIRS[service])
    differ = {name: (ours.get(name), theirs.get(name)) for name in SAME_VALUE[service]
              if ours.get(name) != theirs.get(name)}
    assert not differ, f"{service}: compose vs Kubernetes {differ}"
    assert all(ours.get(name) for name in SAME_VALUE[service]), ours


@pytest.mark.parametrize("service", sorted(SET_IN_BOTH))
def test_tokens_are_required_in_both(service: str) -> None:
    for env in (compose_env(service), k8s_env(PAIRS[service])):
        assert all(env.get(name) for name in SET_IN_BOTH[service]), (service, env)


def test_runners_send_the_key_the_gateway_accepts_in_both() -> None:
    assert compose_env("runner")["RUNNER_GATEWAY_API_KEY"] == compose_env("gateway")["GATEWAY_RUNNER_KEYS"]
    assert k8s_env("runner")["RUNNER_GATEWAY_API_KEY"] == k8s_env("gateway")["GATEWAY_RUNNER_KEYS"]
    for env in (compose_env, k8s_env):  # the runners' key is not the OpenAI clients' one
        assert env("gateway")["GATEWAY_RUNNER_KEYS"] != env("gateway")["GATEWAY_API_KEYS"]
    assert k8s_env("producer")["PRODUCER_GATEWAY_ADMIN_TOKEN"] == k8s_env("gateway")["GATEWAY_ADMIN_TOKEN"]


@pytest.mark.parametrize("env", [compose_env, k8s_env])
def test_a_reset_never_wipes_the_env_pods_own_runtime_dirs(env: Any) -> None:
    settings = env("desktop_env" if env is compose_env else "env-pod-template")
    if settings.get("DESKTOP_WIPE_TMP") == "true":
        for name in ("DESKTOP_RUNTIME_DIR", "DESKTOP_XDG_RUNTIME_DIR"):
            assert settings.get(name), f"{name} unset: its default lies in /tmp, which a reset wipes"
            assert not PurePosixPath(settings[name]).is_relative_to("/tmp"), (name, settings[name])
