"""The OpenAI routes (`services/model_gateway/proxy.py`) over scripted-policy replicas (mocks of vLLM GPU servers),
real HTTP on loopback: sticky routing and its metrics, policy versions, API keys, 503s, `/v1/models`."""

from __future__ import annotations

from pathlib import Path

import httpx

from common.polling import free_port, wait_until
from services.model_gateway.server import create_app as create_gateway
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.model_gateway.helpers import CHAT, chat, policies, rid, settings_for, states
from tests.servers import serve_app


def test_sticky_per_episode_and_spread_of_new_episodes(replicas: list[str]) -> None:
    with serve_app(create_gateway(settings_for(replicas))) as gw, httpx.Client(base_url=gw, timeout=10) as c:
        pinned: dict[str, str] = {}
        for i in range(6):
            episode = f"run:task:{i}"
            seen = {c.post(CHAT, json=chat(), headers={"X-Episode-Id": episode}).headers["X-Replica"]
                    for _ in range(5)}
            assert len(seen) == 1, seen  # sticky
            pinned[episode] = seen.pop()
        # Bounded loads: neither replica holds more than ceil(1.25 * 6 / 2) = 4 of the 6 episodes.
        assert 2 <= sorted(pinned.values()).count(rid(replicas[0])) <= 4
        by_user = {c.post(CHAT, json=chat(user="trainer-7")).headers["X-Replica"] for _ in range(4)}
        assert len(by_user) == 1
        by_session = {c.post(CHAT, json=chat(), headers={"X-Session-Id": "s"}).headers["X-Replica"]
                      for _ in range(4)}
        assert len(by_session) == 1
        response = c.post(CHAT, json=chat(), headers={"X-Episode-Id": "run:task:0"})
        assert response.headers["X-Model-Version"] == {rid(replicas[0]): "v0", rid(replicas[1]): "v1"}[
            response.headers["X-Replica"]]
        assert response.json()["choices"][0]["message"]["content"] == "R0"
        metrics = c.get("/metrics").text
        assert 'gateway_routing_decisions_total{decision="new"} 8.0' in metrics
        assert 'gateway_routing_decisions_total{decision="sticky"} 31.0' in metrics
        for name in ("gateway_replica_in_flight{", "gateway_upstream_latency_seconds_bucket{",
                     "gateway_overhead_seconds_bucket{", "gateway_retries_total"):
            assert name in metrics


def test_no_healthy_replica_is_503(scripts_dir: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with serve_app(create_gateway(settings_for([dead], unhealthy_after=1))) as gw:
        wait_until(lambda: states(gw)[rid(dead)]["healthy"] is False, 10, "the dead replica marked unhealthy")
        response = httpx.post(f"{gw}{CHAT}", json=chat(), timeout=10)
        assert response.status_code == 503
        assert response.json()["error"].startswith("no healthy replica")
        assert response.headers["X-Model-Version"] == "unknown"
        assert httpx.get(f"{gw}/v1/models", timeout=10).status_code == 503
    with serve_app(create_gateway(settings_for([]))) as gw:
        assert httpx.post(f"{gw}{CHAT}", json=chat(), timeout=10).status_code == 503


def test_model_version_follows_a_reload(replicas: list[str]) -> None:
    with serve_app(create_gateway(settings_for(replicas[:1]))) as gw:
        assert httpx.post(f"{gw}{CHAT}", json=chat(), timeout=10).headers["X-Model-Version"] == "v0"
        httpx.post(f"{replicas[0]}/admin/reload", json={"model_version": "v5"}, timeout=10)
        assert httpx.post(f"{gw}{CHAT}", json=chat(), timeout=10).headers["X-Model-Version"] == "v5"
        assert states(gw)[rid(replicas[0])]["model_version"] == "v5"


def test_requests_go_only_to_replicas_of_an_accepted_version(scripts_dir: Path) -> None:
    with serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir, model_version="v1"))) as old, \
            serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir, model_version="v2"))) as new, \
            serve_app(create_gateway(settings_for([old, new], version_wait_s=0.5))) as gw, \
            httpx.Client(base_url=gw, timeout=10) as c:
        for i in range(6):
            exact = c.post(CHAT, json=chat(), headers={"X-Policy-Version": "v1", "X-Episode-Id": f"e{i}"})
            assert (exact.status_code, exact.headers["X-Replica"], exact.headers["X-Model-Version"]) == (
                200, rid(old), "v1")
            fresh = c.post(CHAT, json=chat(), headers={"X-Min-Policy-Version": "v2", "X-Episode-Id": f"e{i}"})
            assert (fresh.headers["X-Replica"], fresh.headers["X-Model-Version"]) == (rid(new), "v2")
        conflict = c.post(CHAT, json=chat(), headers={"X-Policy-Version": "v9"})
        assert conflict.status_code == 409
        assert conflict.json()["available_versions"] == ["v1", "v2"]
        assert conflict.json()["requested"] == {"policy_version": "v9", "min_policy_version": None}
        bad = c.post(CHAT, json=chat(), headers={"X-Min-Policy-Version": "latest"})
        assert bad.status_code == 400 and "X-Min-Policy-Version" in bad.json()["error"]
        assert "gateway_version_conflicts_total 1.0" in c.get("/metrics").text


def test_admin_token_and_api_keys(scripts_dir: Path) -> None:
    with policies(scripts_dir, 1) as urls:
        settings = settings_for(urls, admin_token="s3cret", api_keys="k1,k2")
        with serve_app(create_gateway(settings)) as gw, httpx.Client(base_url=gw, timeout=10) as c:
            assert c.get("/admin/replicas").status_code == 401
            assert c.get("/admin/reload", headers={"Authorization": "Bearer nope"}).status_code == 401
            assert c.get("/admin/replicas", headers={"Authorization": "Bearer s3cret"}).status_code == 200
            assert c.post("/admin/reload", json={"version": "v1", "source": "/c/v1"}).status_code == 401
            denied = c.post(CHAT, json=chat())
            assert denied.status_code == 401 and denied.json() == {"error": "Unauthorized"}
            assert c.post(CHAT, json=chat(), headers={"Authorization": "Bearer k3"}).status_code == 401
            assert c.post(CHAT, json=chat(), headers={"Authorization": "Bearer k2"}).status_code == 200
            assert c.get("/v1/models").status_code == 401
            assert c.get("/sessions/s-1/v1/models").status_code == 401  # the sessions' model list too
            assert c.get("/healthz").status_code == 200  # probes stay open
