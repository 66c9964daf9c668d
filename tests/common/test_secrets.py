"""Weak secrets outside local mode (common/secrets.py): each service's settings refuse a well-known or (where
required) empty secret, naming the variable and never the value; loopback-only services, `CUA_LOCAL_MODE=1`
and the deployments' own secrets (compose's `make env`, the Kubernetes dev overlay) pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr, ValidationError

from common.env_file import write_env_file
from common.secrets import is_loopback, is_well_known, local_mode, redis_secrets, weak_secret_problems
from common.settings import ObjectStoreSettings
from services.model_gateway.settings import GatewaySettings
from services.runner.settings import RunnerSettings
from services.storage_sink.settings import SinkSettings
from services.task_producer.settings import ProducerSettings

ROOT = Path(__file__).resolve().parents[2]
STRONG = "Zq3v-8pW1rT6yKx2mN9bH4cJ7dLs0aFe"


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("PRODUCER_", "GATEWAY_", "RUNNER_", "SINK_", "S3_", "STORE_URL", "CUA_LOCAL_MODE")):
            monkeypatch.delenv(name)


@pytest.mark.parametrize(("address", "loopback"), [
    ("127.0.0.1", True), ("127.1.2.3", True), ("localhost", True), ("::1", True), ("[::1]:8000", True),
    ("127.0.0.1:9000", True), ("http://127.0.0.1:8000/v1", True), ("http://localhost:8000", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("minio:9000", False), ("http://gateway:8000", False),
    ("https://s3.amazonaws.com", False), ("", False),
])
def test_is_loopback(address: str, loopback: bool) -> None:
    assert is_loopback(address) is loopback


def test_local_mode_is_declared_or_loopback_only() -> None:
    assert local_mode(None, ["127.0.0.1", "localhost:9000"]) and local_mode(None, [])
    assert not local_mode(None, ["127.0.0.1", "0.0.0.0"])
    assert local_mode(True, ["0.0.0.0"]) and not local_mode(False, ["127.0.0.1"])


def test_well_known_and_required() -> None:
    assert is_well_known(" MinioAdmin ") and is_well_known("changeme") and is_well_known("dev-token")
    assert not is_well_known(STRONG)
    problems = weak_secret_problems({"A": SecretStr(""), "B": "changeme", "C": None, "D_KEYS": f"{STRONG},dev-token",
                                     "E": STRONG}, required=["A"])
    assert problems == ["A is empty but required", "B is a well-known default secret",
                        "D_KEYS is a well-known default secret"]


def _refused(build: type, variable: str, **fields: object) -> str:
    with pytest.raises(ValidationError) as caught:
        build(**fields)
    message = str(caught.value)
    assert variable in message and "outside local mode" in message, message
    return message


def test_producer_refuses_outside_local_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    _refused(ProducerSettings, "PRODUCER_API_TOKEN", host="0.0.0.0")  # empty: required
    message = _refused(ProducerSettings, "PRODUCER_API_TOKEN", host="0.0.0.0", api_token="changeme")
    assert "changeme" not in message and "PRODUCER_HOST is '0.0.0.0'" in message
    _refused(ProducerSettings, "PRODUCER_GATEWAY_ADMIN_TOKEN", host="0.0.0.0", api_token=STRONG,
             gateway_admin_token="dev-token")
    _refused(ProducerSettings, "S3_SECRET_KEY", host="0.0.0.0", api_token=STRONG, store_url="s3://trajectories",
             s3_endpoint="minio:9000", s3_access_key=STRONG)  # S3_SECRET_KEY keeps its default, minioadmin
    assert ProducerSettings(host="0.0.0.0", api_token=STRONG).api_token.get_secret_value() == STRONG
    assert ProducerSettings().api_token.get_secret_value() == ""  # loopback: local mode, open with a warning
    monkeypatch.setenv("CUA_LOCAL_MODE", "0")
    assert "CUA_LOCAL_MODE=0" in _refused(ProducerSettings, "PRODUCER_API_TOKEN")
    monkeypatch.setenv("CUA_LOCAL_MODE", "1")
    assert ProducerSettings(host="0.0.0.0", api_token="changeme").local_mode is True


def test_gateway_refuses_outside_local_mode() -> None:
    _refused(GatewaySettings, "GATEWAY_ADMIN_TOKEN", host="0.0.0.0", api_keys=STRONG)
    _refused(GatewaySettings, "GATEWAY_API_KEYS", host="0.0.0.0", admin_token=STRONG)
    message = _refused(GatewaySettings, "GATEWAY_API_KEYS", host="0.0.0.0", admin_token=STRONG,
                       api_keys=f"{STRONG},changeme")
    assert STRONG not in message  # the settings' input (every secret read) is not in the error
    settings = GatewaySettings(host="0.0.0.0", admin_token=STRONG, api_keys=f"{STRONG},other-{STRONG}")
    assert settings.api_key_list == [STRONG, f"other-{STRONG}"] and STRONG not in repr(settings)
    assert GatewaySettings(admin_token="s3cret").api_key_list == []  # loopback


def test_sink_and_runner_check_the_secrets_they_send() -> None:
    _refused(SinkSettings, "S3_ACCESS_KEY", store_url="s3://trajectories", s3_endpoint="minio:9000")
    assert SinkSettings(store_url="s3://trajectories").s3_secret_key.get_secret_value() == "minioadmin"  # local
    assert SinkSettings(store_url="file:///tmp/x", s3_endpoint="minio:9000").store_url == "file:///tmp/x"
    _refused(RunnerSettings, "RUNNER_GATEWAY_API_KEY", gateway_url="http://gateway:8000", gateway_api_key="changeme")
    assert RunnerSettings(gateway_url="http://gateway:8000", gateway_api_key=STRONG).gateway_api_key is not None
    assert STRONG not in repr(ObjectStoreSettings(s3_secret_key=STRONG))


def test_a_service_started_with_a_default_secret_exits_naming_it() -> None:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "PRODUCER_HOST": "0.0.0.0",
           "PRODUCER_API_TOKEN": "changeme", "REDIS_URL": "redis://127.0.0.1:1/0"}
    done = subprocess.run([sys.executable, "-m", "services.task_producer"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "PRODUCER_API_TOKEN is a well-known default secret" in done.stderr


def test_deployments_secrets_pass(tmp_path: Path) -> None:
    """What compose gets from `make env`, and the Kubernetes dev overlay's literals, are not refused."""
    env = write_env_file(tmp_path / ".env")
    GatewaySettings(host="0.0.0.0", admin_token=env["GATEWAY_ADMIN_TOKEN"], api_keys=env["GATEWAY_API_KEY"])
    ProducerSettings(host="0.0.0.0", api_token=env["PRODUCER_TOKEN"], store_url="s3://trajectories",
                     s3_endpoint="minio:9000", s3_access_key=env["S3_ACCESS_KEY"], s3_secret_key=env["S3_SECRET_KEY"],
                     gateway_admin_token=env["GATEWAY_ADMIN_TOKEN"])
    overlay = yaml.safe_load((ROOT / "deploy/k8s/overlays/dev/kustomization.yaml").read_text())
    literals = {f"{s['name']}/{item.split('=', 1)[0]}": item.split("=", 1)[1]
                for s in overlay["secretGenerator"] for item in s.get("literals", [])}
    assert len(literals) >= 5 and weak_secret_problems(literals) == []


def test_short_and_repetitive_secrets_are_refused_identifiers_only_when_well_known() -> None:
    problems = weak_secret_problems({"A_TOKEN": "x" * 15 + "y", "B_TOKEN": "abcdabcdabcdabcd", "C_KEYS": f"{STRONG},k",
                                     "S3_ACCESS_KEY": "cua", "cua-s3/access-key": "minioadmin", "D": STRONG[:16]})
    assert problems == [
        "A_TOKEN is too short to be a secret (at least 16 characters, 5 of them distinct)",
        "B_TOKEN is too short to be a secret (at least 16 characters, 5 of them distinct)",
        "C_KEYS is too short to be a secret (at least 16 characters, 5 of them distinct)",
        "cua-s3/access-key is a well-known default secret"]


def test_the_redis_password_and_the_replica_key_are_checked() -> None:
    assert redis_secrets("redis://127.0.0.1:6379/0") == ({}, {})
    assert redis_secrets(f"redis://runner:{STRONG}@redis:6379/0") == ({"REDIS_URL": "redis:6379/0"},
                                                                     {"REDIS_URL password": STRONG})
    _refused(GatewaySettings, "GATEWAY_REPLICA_API_KEY", host="0.0.0.0", admin_token=STRONG, api_keys=STRONG,
             replica_api_key="short-key")
    message = _refused(SinkSettings, "REDIS_URL password", redis_url="redis://:pw-of-14-chars@redis:6379/0")
    assert "REDIS_URL is 'redis:6379/0', not a loopback address" in message and "pw-of-14" not in message
    assert SinkSettings(redis_url=f"redis://:{STRONG}@redis:6379/0").redis_url.endswith("@redis:6379/0")
    assert SinkSettings(redis_url="redis://:short@127.0.0.1:6379/0").redis_url  # loopback: local mode
