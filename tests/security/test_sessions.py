"""Issue 34 attack 3 against a real gateway (HTTP, a scripted replica, a real redis-server): an agent program, or
anyone holding an OpenAI API key, opens a session naming another rollout to rewrite its data, or uses its session
token elsewhere. Only a runner's key (GATEWAY_RUNNER_KEYS) opens, reads or closes a session that names a rollout;
a session's own token is valid on that session's base URL only; every refusal names why and publishes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from common import keys
from common.polling import wait_until
from common.redis_server import RedisServerProcess
from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.settings import GatewaySettings
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.servers import serve_app

API_KEY, RUNNER_KEY = "client-key-" + "a" * 24, "runner-key-" + "b" * 24
ROLLOUT = {"run_id": "victim-run", "task_id": "t1", "rollout_index": 0, "rollout_id": "victim-run:t1:0", "attempt": 7}
CHAT = {"model": "policy", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServerProcess) -> Iterator[str]:
    scripts = tmp_path_factory.mktemp("scripts")
    (scripts / "any.json").write_text(json.dumps({"instruction": "hello", "replies": ["fine"] * 50}))
    with ExitStack() as stack:
        replica = stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts))))
        settings = GatewaySettings(replicas=replica, redis_url=redis_server.url, health_interval_s=0.1,
                                   api_keys=API_KEY, runner_keys=RUNNER_KEY, admin_token="admin-" + "d" * 24)
        url = stack.enter_context(serve_app(create_gateway(settings)))
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=5).json().get("routable") == 1, 10, "replica")
        yield url


def _as(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _stream_length(redis_url: str) -> int:
    with redis.Redis.from_url(redis_url) as client:
        return int(client.xlen(keys.EVENTS_STREAM))


def _open(gateway: str, key: str, **spec: Any) -> httpx.Response:
    return httpx.post(f"{gateway}/v1/sessions", json=spec, headers=_as(key), timeout=10)


def test_an_api_key_cannot_open_a_session_naming_a_rollout(gateway: str, redis_url: str) -> None:
    before = _stream_length(redis_url)
    for spec in (ROLLOUT, {"run_id": "victim-run"}, {"attempt": 2}):
        refused = _open(gateway, API_KEY, **spec)
        assert refused.status_code == 403 and "GATEWAY_RUNNER_KEYS" in refused.json()["error"], refused.text
    assert _stream_length(redis_url) == before  # no episode start published: nothing for the sink to act on
    assert _open(gateway, API_KEY, model="policy").status_code == 201  # its own session: fine


def test_a_session_token_is_valid_on_its_own_base_url_only(gateway: str) -> None:
    mine = _open(gateway, RUNNER_KEY, **ROLLOUT, episode_events=False).json()
    other = _open(gateway, RUNNER_KEY, **{**ROLLOUT, "task_id": "t2", "rollout_id": "victim-run:t2:0"},
                  episode_events=False).json()
    token = _as(mine["token"])
    ok = httpx.post(f"{gateway}{mine['path']}/chat/completions", json=CHAT, headers=token, timeout=30)
    assert ok.status_code == 200, ok.text
    denied = [
        httpx.post(f"{gateway}{other['path']}/chat/completions", json=CHAT, headers=token, timeout=10),
        httpx.post(f"{gateway}/v1/chat/completions", json=CHAT, headers=token, timeout=10),
        httpx.get(f"{gateway}/v1/models", headers=token, timeout=10),
        httpx.post(f"{gateway}/v1/sessions", json=ROLLOUT, headers=token, timeout=10),
        httpx.get(f"{gateway}/v1/sessions/{mine['session_id']}", headers=token, timeout=10),
        httpx.delete(f"{gateway}/v1/sessions/{other['session_id']}", headers=token, timeout=10),
        httpx.get(f"{gateway}/admin/replicas", headers=token, timeout=10),
    ]
    assert [r.status_code for r in denied] == [401] * len(denied), [r.text for r in denied]
    assert "session's token" in denied[0].json()["detail"]
    # the other session was not closed by the refused DELETE: its runner still reads it
    assert httpx.get(f"{gateway}/v1/sessions/{other['session_id']}", headers=_as(RUNNER_KEY),
                     timeout=10).json()["closed"] is False


def test_an_api_key_cannot_use_read_or_close_a_runners_session(gateway: str) -> None:
    session = _open(gateway, RUNNER_KEY, **ROLLOUT, episode_events=False).json()
    key = _as(API_KEY)
    chat = httpx.post(f"{gateway}{session['path']}/chat/completions", json=CHAT, headers=key, timeout=10)
    assert chat.status_code == 401
    for method in ("GET", "DELETE"):
        refused = httpx.request(method, f"{gateway}/v1/sessions/{session['session_id']}", headers=key, timeout=10)
        assert refused.status_code == 403 and "GATEWAY_RUNNER_KEYS" in refused.json()["error"]
    closed = httpx.delete(f"{gateway}/v1/sessions/{session['session_id']}", headers=_as(RUNNER_KEY), timeout=10)
    assert closed.status_code == 200 and closed.json()["records"] == []  # the refused call recorded nothing


def test_a_runner_key_shared_with_the_api_keys_is_refused() -> None:
    with pytest.raises(ValueError, match="GATEWAY_RUNNER_KEYS and GATEWAY_API_KEYS share a key"):
        GatewaySettings(api_keys=f"{API_KEY},other", runner_keys=API_KEY)


def test_keys_of_no_role_get_401(gateway: str, tmp_path: Path) -> None:
    for headers in ({}, _as("guess")):
        assert httpx.post(f"{gateway}/v1/sessions", json={}, headers=headers, timeout=10).status_code == 401
        denied = httpx.post(f"{gateway}/v1/chat/completions", json=CHAT, headers=headers, timeout=10)
        assert denied.status_code == 401 and denied.json() == {"error": "Unauthorized"}
