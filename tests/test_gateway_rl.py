"""The gateway's RL features over scripted-policy replicas (mocks of vLLM GPU servers), real HTTP on loopback:
policy versions, rolling reloads, bounded-load routing, the breaker, auth, deadlines."""

from __future__ import annotations

import asyncio
import json
import math
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from common.polling import wait_until
from common.versions import VersionRequirement, min_version_for, requirement_from_headers, version_order_key
from services.model_gateway.replicas import BreakerState, ReplicaPool
from services.model_gateway.routing import ConsistentRouter
from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.settings import GatewaySettings
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.servers import serve_app

CHAT = "/v1/chat/completions"


def chat(text: str = "Rename the folder") -> dict:
    return {"model": "policy", "messages": [{"role": "user", "content": text}]}


def rid(url: str) -> str:
    return url.split("//", 1)[1]


@pytest.fixture()
def scripts_dir(tmp_path: Path) -> Path:
    (tmp_path / "a.json").write_text(json.dumps({"instruction": "Rename the folder", "replies": ["R0"] * 50}))
    return tmp_path


@contextmanager
def policies(scripts_dir: Path, count: int, **extra: object) -> Iterator[list[str]]:
    """`count` scripted replicas (mocks of vLLM GPU servers) with `extra` settings; yields their URLs."""
    with ExitStack() as stack:
        yield [stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(
            scripts_dir=scripts_dir, **extra)))) for _ in range(count)]


def gateway(urls: list[str], **extra: object) -> GatewaySettings:
    return GatewaySettings(replicas=",".join(urls), **{"health_interval_s": 0.1, **extra})


def states(gw: str, headers: dict[str, str] | None = None) -> dict[str, dict]:
    return {r["id"]: r for r in httpx.get(f"{gw}/admin/replicas", headers=headers, timeout=5).json()["replicas"]}


def reload_done(gw: str, headers: dict[str, str] | None = None) -> dict:
    view = httpx.get(f"{gw}/admin/reload", headers=headers, timeout=5).json()
    return view["reload"] if not view["running"] and view["reload"] else {}


# --- units -----------------------------------------------------------------------------------------------------


def test_versions_order_by_their_number_not_their_text() -> None:
    seen = ["step-9", "step-10", "step-100"]
    assert (min(seen, key=version_order_key), max(seen, key=version_order_key)) == ("step-9", "step-100")
    assert sorted(["v2", "base", "v10"], key=version_order_key) == ["base", "v2", "v10"]


def test_version_requirements() -> None:
    assert requirement_from_headers({}) is None
    exact = requirement_from_headers({"x-policy-version": "v3"})
    assert exact is not None and exact.satisfied_by("v3") and not exact.satisfied_by("v4")
    minimum = VersionRequirement(minimum="v3")
    assert minimum.satisfied_by("v3") and minimum.satisfied_by("step-12") and not minimum.satisfied_by("v2")
    assert not minimum.satisfied_by("main") and not minimum.satisfied_by(None)
    with pytest.raises(ValueError, match="X-Min-Policy-Version"):
        requirement_from_headers({"x-min-policy-version": "latest"})
    assert min_version_for("v5", 2) == "v3" and min_version_for("ckpt-1", 4) == "ckpt-0"
    with pytest.raises(ValueError, match="no trailing integer"):
        min_version_for("main", 1)


def test_bounded_loads_and_pins_across_adds_and_removes() -> None:
    urls = [f"http://r{i}:1" for i in range(8)]
    pool = ReplicaPool.of(urls, unhealthy_after=1)
    router = ConsistentRouter(pool, ttl_s=3600, max_sessions=10_000, epsilon=0.25)
    for i in range(1000):
        router.route(f"ep-{i}")
    loads = [r.sessions for r in pool.list_replicas()]
    assert sum(loads) == 1000 and max(loads) <= math.ceil(1.25 * 1000 / 8)
    before = dict(router.sessions)
    pool.add("http://r8:1")  # only the excess over the new bound moves (overload), the rest stays pinned
    bound = math.ceil(1.25 * 1000 / 9)
    excess = sum(max(0, load - bound) for load in loads)
    decisions = [router.route(k)[1] for k in before]
    assert set(decisions) <= {"sticky", "overload"} and decisions.count("overload") <= excess
    assert max(r.sessions for r in pool.list_replicas()) <= bound
    before = dict(router.sessions)
    removed = pool.list_replicas()[0].id
    pool.remove(removed)
    moved = {k for k in before if router.route(k)[0].id != before[k][0]}  # type: ignore[union-attr]
    assert moved == {k for k, (r, _) in before.items() if r == removed}


def test_breaker_half_open() -> None:
    pool = ReplicaPool.of(["http://a:1"], unhealthy_after=2, cooldown_s=3600)
    replica = pool.list_replicas()[0]
    pool.record_failure(replica)
    assert replica.breaker == BreakerState.CLOSED
    pool.record_failure(replica)
    assert replica.breaker == BreakerState.OPEN and not replica.routable
    pool.record_success(replica, probe=True)  # within the cooldown: stays open
    assert replica.breaker == BreakerState.OPEN
    pool.cooldown_s = 0.0
    pool.record_success(replica, probe=True)
    assert replica.breaker == BreakerState.HALF_OPEN and replica.routable
    replica.in_flight = 1  # one trial at a time
    assert not replica.routable
    replica.in_flight = 0
    pool.record_failure(replica)  # the trial failed: open again at once
    assert replica.breaker == BreakerState.OPEN
    pool.record_success(replica, probe=True)
    pool.record_success(replica)  # a successful trial request closes it
    assert replica.breaker == BreakerState.CLOSED


# --- HTTP ------------------------------------------------------------------------------------------------------


def test_requests_go_only_to_replicas_of_an_accepted_version(scripts_dir: Path) -> None:
    with serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir, model_version="v1"))) as old, \
            serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir, model_version="v2"))) as new, \
            serve_app(create_gateway(gateway([old, new], version_wait_s=0.5))) as gw, \
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


@pytest.mark.parametrize("method", ["vllm_lora", "vllm_sleep", "command"])
def test_rolling_reload_in_waves_under_load(scripts_dir: Path, method: str) -> None:
    command = (f"{sys.executable} -c \"import httpx, os; httpx.post(os.environ['REPLICA_URL'] + '/admin/reload', "
               "json={'model_version': os.environ['RELOAD_VERSION']}, timeout=30).raise_for_status()\"")
    with policies(scripts_dir, 3, reload_ms=300, latency_ms=20) as urls:
        settings = gateway(urls, reload_method=method, reload_command=command)
        with serve_app(create_gateway(settings)) as gw:
            wait_until(lambda: all(s["model_version"] == "v0" for s in states(gw).values()), 10, "versions known")
            statuses: list[int] = []
            versions: list[str] = []
            drained_at_once: list[int] = []
            stop = threading.Event()

            def traffic(worker: int) -> None:
                with httpx.Client(base_url=gw, timeout=30) as c:
                    step = 0
                    while not stop.is_set():
                        r = c.post(CHAT, json=chat(), headers={"X-Episode-Id": f"w{worker}-{step // 5}"})
                        statuses.append(r.status_code)
                        versions.append(r.headers["X-Model-Version"])
                        step += 1

            threads = [threading.Thread(target=traffic, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            try:
                started = httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/ckpt/v1",
                                                                 "max_unavailable": 1}, timeout=10)
                assert started.status_code == 202, started.text
                again = httpx.post(f"{gw}/admin/reload", json={"version": "v2", "source": "/ckpt/v2"}, timeout=10)
                assert again.status_code == 409

                def finished() -> dict:
                    drained_at_once.append(sum(s["draining"] for s in states(gw).values()))
                    return reload_done(gw)

                result = wait_until(finished, 60, "the reload to finish", interval_s=0.02)
            finally:
                stop.set()
                for t in threads:
                    t.join(timeout=30)
            assert result["state"] == "succeeded", result
            assert [p["state"] for p in result["replicas"]] == ["done"] * 3
            assert [p["wave"] for p in result["replicas"]] == [0, 1, 2]
            assert max(drained_at_once) == 1  # max_unavailable
            assert all(s["model_version"] == "v1" and not s["draining"] for s in states(gw).values())
            assert statuses and set(statuses) == {200}, set(statuses)  # nothing failed or aborted
            assert {"v0", "v1"} == set(versions)


def test_request_for_the_new_version_waits_for_a_reloading_replica(scripts_dir: Path) -> None:
    # the reload lasts long enough that the request below surely starts while it is on, even on a loaded machine
    with policies(scripts_dir, 1, reload_ms=3000) as urls:
        with serve_app(create_gateway(gateway(urls, version_wait_s=10))) as gw:
            wait_until(lambda: states(gw)[rid(urls[0])]["model_version"] == "v0", 10, "version known")
            assert httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/ckpt/v1"},
                              timeout=10).status_code == 202
            wait_until(lambda: states(gw)[rid(urls[0])]["reloading"], 10, "the reload to start", interval_s=0.01)
            waited = httpx.post(f"{gw}{CHAT}", json=chat(), headers={"X-Policy-Version": "v1"}, timeout=15)
            assert waited.status_code == 200 and waited.headers["X-Model-Version"] == "v1"
            assert "gateway_version_waits_total 1.0" in httpx.get(f"{gw}/metrics").text
    with policies(scripts_dir, 1, reload_ms=3000) as urls:
        with serve_app(create_gateway(gateway(urls, version_wait_s=0.2))) as gw:
            wait_until(lambda: states(gw)[rid(urls[0])]["model_version"] == "v0", 10, "version known")
            httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/ckpt/v1"}, timeout=10)
            wait_until(lambda: states(gw)[rid(urls[0])]["reloading"], 10, "the reload to start", interval_s=0.01)
            late = httpx.post(f"{gw}{CHAT}", json=chat(), headers={"X-Policy-Version": "v1"}, timeout=15)
            assert late.status_code == 503  # the only replica is drained: nothing routable within the wait


def test_failed_reload_rolls_back_or_leaves_drained(scripts_dir: Path) -> None:
    with policies(scripts_dir, 3, reload_fail_versions="bad") as urls:
        with serve_app(create_gateway(gateway(urls))) as gw:
            httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/ckpt/v1"}, timeout=10)
            assert wait_until(lambda: reload_done(gw), 30, "first reload")["state"] == "succeeded"
            httpx.post(f"{gw}/admin/reload", json={"version": "bad", "source": "/ckpt/bad"}, timeout=10)
            result = wait_until(lambda: reload_done(gw), 30, "failing reload")
            assert result["state"] == "failed" and rid(urls[0]) in result["error"]
            assert [p["state"] for p in result["replicas"]] == ["rolled_back", "skipped", "skipped"]
            assert "injected reload failure" in result["replicas"][0]["error"]
            assert all(s["model_version"] == "v1" and not s["draining"] for s in states(gw).values())
            ok = httpx.post(f"{gw}{CHAT}", json=chat(), headers={"X-Policy-Version": "v1"}, timeout=10)
            assert ok.status_code == 200
    with policies(scripts_dir, 2, reload_fail_versions="bad") as urls:
        with serve_app(create_gateway(gateway(urls))) as gw:
            httpx.post(f"{gw}/admin/reload", json={"version": "bad", "source": "/ckpt/bad"}, timeout=10)
            result = wait_until(lambda: reload_done(gw), 30, "failing reload")
            assert [p["state"] for p in result["replicas"]] == ["left_drained", "skipped"]
            first = states(gw)[rid(urls[0])]
            assert first["draining"] and first["model_version"] == "v0"  # never re-admitted on a wrong version
            answers = {httpx.post(f"{gw}{CHAT}", json=chat(), headers={"X-Episode-Id": f"e{i}"},
                                  timeout=10).headers["X-Replica"] for i in range(5)}
            assert answers == {rid(urls[1])}
    with serve_app(create_gateway(gateway([]))) as gw:
        assert httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/x"}, timeout=10).status_code == 422
        assert httpx.post(f"{gw}/admin/reload", json={"version": "v1"}, timeout=10).status_code == 422


def test_admin_token_and_api_keys(scripts_dir: Path) -> None:
    with policies(scripts_dir, 1) as urls:
        settings = gateway(urls, admin_token="s3cret", api_keys="k1,k2")
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
            assert c.get("/healthz").status_code == 200  # probes stay open


def test_deadline_header_and_client_gone(scripts_dir: Path) -> None:
    with policies(scripts_dir, 2, latency_ms=1500) as urls:
        with serve_app(create_gateway(gateway(urls))) as gw:
            late = httpx.post(f"{gw}{CHAT}", json=chat(), headers={"X-Request-Timeout-S": "0.3"}, timeout=10)
            assert late.status_code == 504 and "deadline" in late.json()["error"]
            bad = httpx.post(f"{gw}{CHAT}", json=chat(), headers={"X-Request-Timeout-S": "soon"}, timeout=10)
            assert bad.status_code == 400 and "X-Request-Timeout-S" in bad.json()["error"]

            async def leave_early() -> None:
                async with httpx.AsyncClient(timeout=0.3) as client:
                    with pytest.raises(httpx.ReadTimeout):
                        await client.post(f"{gw}{CHAT}", json=chat())

            asyncio.run(leave_early())
            wait_until(lambda: "gateway_client_gone_total 1.0" in httpx.get(f"{gw}/metrics").text, 10,
                       "the gateway to see the client go")
            assert "gateway_retries_total 0.0" in httpx.get(f"{gw}/metrics").text  # no other replica was asked
            assert all(s["in_flight"] == 0 for s in states(gw).values())


def test_routing_simulation_default_keeps_caches_warm_and_loads_even() -> None:
    from bench.routing_sim import ConsistentBounded, RoundRobin, simulate

    sizes = {"replicas": 8, "episodes": 400, "rounds": 60, "churn_every": 30}
    default = simulate(lambda names: ConsistentBounded(names, ttl_rounds=3, epsilon=0.25), **sizes)
    baseline = simulate(lambda names: RoundRobin(), **sizes)
    assert default.hit_rate >= 0.9 and baseline.hit_rate < 0.3
    assert default.load_ratio <= 1.25


def test_runner_client_sends_versions_and_reads_vllm_token_fields(scripts_dir: Path) -> None:
    from common.vllm_protocol import ChatCompletionStreamResponse
    from services.runner.model_client import ModelClient, ModelError, read_tokens, version_headers

    assert version_headers(None, None) == {} and version_headers("v4", None) == {"X-Policy-Version": "v4"}
    assert version_headers("v4", 2) == {"X-Min-Policy-Version": "v2"}
    # Older vLLM without token_ids: ids come from `token_id:<id>` tokens (return_tokens_as_token_ids).
    choice = {"logprobs": {"content": [{"token": "token_id:7", "logprob": -0.5}, {"token": "token_id:9",
                                                                                 "logprob": -0.1}]}}
    assert read_tokens({}, choice) == ([7, 9], [-0.5, -0.1], None)
    with policies(scripts_dir, 2) as urls, serve_app(create_gateway(gateway(urls))) as gw:
        client = ModelClient(gw, timeout_s=20, connect_timeout_s=5)
        try:
            messages = [{"role": "user", "content": [{"type": "text", "text": "Rename the folder"},
                                                     {"type": "image_url", "image_url": {"url": "data:,"}}]}]
            reply = client.complete(messages, "policy", {"logprobs": True}, "run:t:0", "v0", 1)
            assert reply.text == "R0" and reply.model_version == "v0"
            assert reply.token_ids == list(b"R0") and reply.logprobs is not None and len(reply.logprobs) == 2
            assert reply.prompt_token_ids is not None and len(reply.prompt_token_ids) == reply.prompt_tokens >= 1000
            with pytest.raises(ModelError, match="409"):
                client.complete(messages, "policy", {"logprobs": True}, "run:t:1", "v5", None)
        finally:
            client.close()
        # Streaming through the gateway: the chunks arrive as the replica sent them, token fields included.
        body = {**chat(), "stream": True, "logprobs": True, "return_token_ids": True}
        with httpx.stream("POST", f"{gw}{CHAT}", json=body, timeout=10) as response:
            lines = [line for line in response.iter_lines() if line.startswith("data: {")]
        chunks = [ChatCompletionStreamResponse.model_validate_json(line[6:]) for line in lines]
        assert [i for c in chunks for i in (c.choices[0].token_ids or [])] == list(b"R0")
        assert chunks[0].prompt_token_ids
