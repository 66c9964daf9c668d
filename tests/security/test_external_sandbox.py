"""Issue 34 attack 3, the agent program's side: a third-party program run by the runner reads the runner's
secrets (`/proc/<ppid>/environ`, its files) or reaches the control plane. It runs in bubblewrap
(services/runner/external_sandbox.py): the program below tries all of it and finds only its env and its
session. Real bubblewrap, a real gateway session (scripted replica, redis-server) and a real HTTP server as the
env's address."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from common.redis_server import RedisServerProcess
from common.status import RolloutStatus
from services.runner import external, external_sandbox
from services.runner.external_sandbox import SandboxUnavailable, sandbox
from services.runner.outcome import EpisodeStop
from services.runner.settings import RunnerSettings
from tests.security.test_sessions import ROLLOUT, RUNNER_KEY, gateway  # noqa: F401 (the module's gateway)

SECRET = "runner-secret-" + "c" * 20

ATTACK = r'''
import json, os, socket, sys, urllib.request
secret, runner_pid, redis_port = sys.argv[1], sys.argv[2], int(sys.argv[3])
runner_file = os.environ["RUNNER_FILE"]  # not on the command line: the directories of its paths are bound
found = {}
pids = [p for p in os.listdir("/proc") if p.isdigit()]
found["processes"] = len(pids)
found["environ_with_secret"] = []
for pid in pids + [runner_pid, str(os.getppid())]:
    try:
        if secret.encode() in open(f"/proc/{pid}/environ", "rb").read():
            found["environ_with_secret"].append(pid)
    except OSError:
        pass
found["own_env_has_secret"] = any(secret in v for v in os.environ.values())
try:
    found["runner_file"] = open(runner_file).read()
except OSError as exc:
    found["runner_file"] = repr(exc)
def reach(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return True
    except OSError:
        return False
found["redis"] = reach("127.0.0.1", redis_port)
found["internet"] = reach("1.1.1.1", 53)
def get(url, token=None, body=None):
    request = urllib.request.Request(url, json.dumps(body).encode() if body else None,
                                     {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        return urllib.request.urlopen(request, timeout=30).status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError as exc:
        return repr(exc)
key, base = os.environ["OPENAI_API_KEY"], os.environ["OPENAI_BASE_URL"]
found["env"] = get(os.environ["OSWORLD_SERVER_URL"] + "/healthz")
found["session"] = get(base + "/chat/completions", key, {"model": "policy", "max_tokens": 4,
                                                         "messages": [{"role": "user", "content": "hi"}]})
found["gateway_api"] = get(base.split("/sessions/")[0] + "/v1/models", key)
found["home_writable"] = os.access(os.environ["HOME"], os.W_OK)
open(os.path.join(os.environ["HOME"], "found.json"), "w").write(json.dumps(found))
'''


@pytest.fixture()
def runner_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The runner's secrets: in its environment and in a file of its own."""
    monkeypatch.setenv("S3_SECRET_KEY", SECRET)
    monkeypatch.setenv("REDIS_URL", f"redis://:{SECRET}@127.0.0.1:6379/0")
    path = tmp_path / "runner-only" / "credentials"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def _attack(tmp_path: Path, gateway_url: str, env_url: str, secret_file: Path, redis_port: int) -> dict[str, Any]:
    session = httpx.post(f"{gateway_url}/v1/sessions", json={**ROLLOUT, "episode_events": False},
                         headers={"Authorization": f"Bearer {RUNNER_KEY}"}, timeout=10).json()
    program_dir = tmp_path / "program"
    program_dir.mkdir()
    (program_dir / "attack.py").write_text(ATTACK)
    work = tmp_path / "work"
    work.mkdir()
    argv = [sys.executable, str(program_dir / "attack.py"), SECRET, str(os.getpid()), str(redis_port)]
    with sandbox(argv, work, env_url, gateway_url, session["path"]) as box:
        env = {"PATH": os.environ["PATH"], "OSWORLD_SERVER_URL": box.env_url, "OPENAI_BASE_URL": box.base_url,
               "OPENAI_API_KEY": session["token"], "RUNNER_FILE": str(secret_file)}
        done = subprocess.run(box.argv, env=env, capture_output=True, text=True, timeout=120, cwd=work)
    assert done.returncode == 0, done.stderr
    return dict(json.loads((work / "found.json").read_text()))


def test_the_program_sees_neither_the_runners_secrets_nor_the_control_plane(
        tmp_path: Path, gateway: str, runner_secrets: Path, redis_server: RedisServerProcess) -> None:  # noqa: F811
    # the env's address: any real HTTP server will do (the relay carries bytes); the gateway's own
    found = _attack(tmp_path, gateway, gateway, runner_secrets, redis_server.port)
    assert found["environ_with_secret"] == [] and found["own_env_has_secret"] is False
    assert found["processes"] <= 4  # bwrap's init, the relay entry, the program: not the runner's
    assert "No such file" in found["runner_file"]
    assert found["redis"] is False and found["internet"] is False
    assert found["env"] == 200 and found["session"] == 200  # its own session, through the relay, with its own token
    assert found["gateway_api"] == 401  # the token is worth nothing elsewhere
    assert found["home_writable"] is True


def test_without_bubblewrap_the_episode_refuses_unless_allowed(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a runner image without the bubblewrap package
    with pytest.raises(SandboxUnavailable, match="bubblewrap .* is not installed"):
        external_sandbox.probe()
    session = {"path": "/sessions/s-1/v1", "base_url": "http://gw/sessions/s-1/v1"}
    episode = SimpleNamespace(env_url="http://env:5000", settings=RunnerSettings(gateway_url="http://gw"))
    with pytest.raises(EpisodeStop, match="sandbox cannot be built .*RUNNER_EXTERNAL_UNSANDBOXED=1") as stop:
        with external._confined(["agent"], tmp_path, episode, session):  # type: ignore[arg-type]
            pass
    assert stop.value.status is RolloutStatus.SETUP_ERROR
    episode.settings = RunnerSettings(gateway_url="http://gw", external_unsandboxed=True)
    with external._confined(["agent"], tmp_path, episode, session) as confined:  # type: ignore[arg-type]
        assert confined == (["agent"], "http://env:5000", "http://gw/sessions/s-1/v1")
