"""The model gateway over scripted-policy replicas (mocks of vLLM GPU servers), over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.polling import free_port, http_ok, wait_until
from services.model_gateway.body import ClientGone, RequestBody
from services.model_gateway.replicas import ReplicaPool, replica_id
from services.model_gateway.routing import ConsistentRouter, body_session_key, header_session_key, session_key
from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.settings import GatewaySettings
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.servers import serve_app

REPO = Path(__file__).resolve().parents[1]
CHAT = "/v1/chat/completions"


@pytest.fixture()
def scripts_dir(tmp_path: Path) -> Path:
    (tmp_path / "a.json").write_text(json.dumps({"instruction": "Rename the folder", "replies": ["R0", "R1"]}))
    return tmp_path


def chat(text: str = "Rename the folder", **extra: object) -> dict:
    return {"model": "ui-tars-1.5-7b", "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
            **extra}


def rid(url: str) -> str:
    """Replica id (`host:port`) of a base URL."""
    return url.split("//", 1)[1]


@pytest.fixture()
def replicas(scripts_dir: Path) -> Iterator[list[str]]:
    """Two scripted replicas serving versions v0 and v1."""
    with ExitStack() as stack:
        yield [stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(
            scripts_dir=scripts_dir, model_version=f"v{i}")))) for i in range(2)]


def settings_for(urls: list[str], **extra: object) -> GatewaySettings:
    return GatewaySettings(replicas=",".join(urls), **{"health_interval_s": 0.1, **extra})


def states(gw: str) -> dict[str, dict]:
    return {r["id"]: r for r in httpx.get(f"{gw}/admin/replicas", timeout=5).json()["replicas"]}


# --- routing units (no HTTP) ---------------------------------------------------------------------------------


def test_session_key_precedence_and_cheap_scans() -> None:
    body = json.dumps(chat(user="u-1")).encode()
    reads: list[int] = []

    async def read() -> bytes:
        reads.append(1)
        return body

    assert asyncio.run(session_key({"x-episode-id": "e", "x-session-id": "s"}, read)) == "e"
    assert asyncio.run(session_key({"x-session-id": "s"}, read)) == "s"
    assert not reads  # a session header: the body is not read
    assert asyncio.run(session_key({}, read)) == "u-1" and len(reads) == 1
    assert header_session_key({}) is None
    assert body_session_key(body) == "u-1"
    assert body_session_key(json.dumps(chat()).encode()) is None  # "role": "user" is not a user field
    assert body_session_key(b'{"user": broken') is None
    # A user message quoting a user field is escaped inside the JSON string: no match.
    assert body_session_key(json.dumps(chat('say {"user": "x"}')).encode()) is None


def test_router_pins_migrates_and_expires() -> None:
    pool = ReplicaPool.of(["http://a:1", "http://b:2"], unhealthy_after=1)
    router = ConsistentRouter(pool, ttl_s=3600, max_sessions=2)
    first, decision = router.route("e1")
    assert decision == "new" and first is not None
    assert router.route("e1") == (first, "sticky")
    router.route("e2")
    router.route("e3")  # evicts e1 (LRU bound 2)
    assert "e1" not in router.sessions and len(router.sessions) == 2
    assert sum(r.sessions for r in pool.list_replicas()) == 2
    pinned = router.sessions["e2"][0]
    pool.drain(pinned)
    moved, decision = router.route("e2")
    assert decision == "migrated" and moved is not None and moved.id != pinned
    pool.drain(pinned, draining=False)
    for replica in pool.list_replicas():
        pool.record_failure(replica)
    assert router.route("e9") == (None, "new")
    expiring = ConsistentRouter(ReplicaPool.of(["http://a:1"], 3), ttl_s=0.0, max_sessions=10)
    expiring.route("e")
    wait_until(lambda: expiring.route("e")[1] == "new", 2, "the sticky entry to expire")
    assert replica_id("http://127.0.0.1:8001/") == "127.0.0.1:8001"


# --- HTTP ----------------------------------------------------------------------------------------------------------


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


BIG_BODY = b'{ "messages":[{"role":"user","content":"Rename the folder ' + b"A" * 5_000_000 + b'"}] ,"model":"m"}'


@pytest.mark.parametrize("episode_header", [{}, {"X-Episode-Id": "e"}, {"X-Episode-Id": "e", "Expect": "100-continue"}],
                         ids=["read-whole", "relayed-as-it-arrives", "relayed-after-100-continue"])
def test_five_megabyte_body_forwarded_byte_exact(replicas: list[str], episode_header: dict[str, str]) -> None:
    # Odd spacing and key order: a re-serializing proxy would change the hash. Without a session header the
    # gateway reads the body whole (the `user` member may be anywhere); with one it relays it while it arrives.
    with serve_app(create_gateway(settings_for(replicas))) as gw:
        response = httpx.post(f"{gw}{CHAT}", content=BIG_BODY, timeout=30,
                              headers={"content-type": "application/json", **episode_header})
    assert response.status_code == 200
    assert response.headers["X-Body-Sha256"] == hashlib.sha256(BIG_BODY).hexdigest()
    assert response.json()["usage"]["prompt_tokens"] > 1_000_000


def test_relayed_body_is_replayed_whole_on_a_retry(scripts_dir: Path) -> None:
    with serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir, fail_first_n=1))) as bad, \
            serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir))) as good, \
            serve_app(create_gateway(settings_for([bad, good], health_interval_s=60))) as gw:
        answers = [httpx.post(f"{gw}{CHAT}", content=BIG_BODY, headers={"X-Episode-Id": f"e{i}"}, timeout=30)
                   for i in range(4)]  # new episodes alternate: at least one lands on `bad` first
        assert "gateway_retries_total 1.0" in httpx.get(f"{gw}/metrics").text
    assert all(a.status_code == 200 for a in answers)
    assert {a.headers["X-Body-Sha256"] for a in answers} == {hashlib.sha256(BIG_BODY).hexdigest()}


def test_client_leaving_mid_body_is_not_the_replicas_fault(replicas: list[str]) -> None:
    with serve_app(create_gateway(settings_for(replicas, health_interval_s=60))) as gw:
        host, port = rid(gw).split(":")
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(f"POST {CHAT} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                         f"X-Episode-Id: e\r\nContent-Length: {len(BIG_BODY)}\r\n\r\n".encode())
            conn.sendall(BIG_BODY[:1_000_000])  # then leave, 4 MB short
        wait_until(lambda: "gateway_client_gone_total 1.0" in httpx.get(f"{gw}/metrics").text, 10,
                   "the gateway to see the client go mid-body")
        assert all(s["healthy"] and s["in_flight"] == 0 for s in states(gw).values())
        assert "gateway_retries_total 0.0" in httpx.get(f"{gw}/metrics").text
        assert httpx.post(f"{gw}{CHAT}", json=chat(), headers={"X-Episode-Id": "e"}, timeout=10).status_code == 200


def test_streaming_passthrough(replicas: list[str]) -> None:
    with serve_app(create_gateway(settings_for(replicas))) as gw:
        with httpx.stream("POST", f"{gw}{CHAT}", json=chat(stream=True), headers={"X-Episode-Id": "e"},
                          timeout=10) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["X-Replica"] in {rid(u) for u in replicas}
            assert response.headers["X-Model-Version"] in {"v0", "v1"}
            text = "".join(response.iter_text())
        events = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        assert "".join(json.loads(e)["choices"][0]["delta"].get("content", "") for e in events[:-1]) == "R0"
        assert all(r["in_flight"] == 0 for r in states(gw).values())


def test_retry_on_another_replica_after_5xx(scripts_dir: Path) -> None:
    with serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir, fail_first_n=3))) as bad, \
            serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir))) as good, \
            serve_app(create_gateway(settings_for([bad, good], health_interval_s=60))) as gw:
        for i in range(8):  # new episodes alternate between replicas until bad's breaker opens
            response = httpx.post(f"{gw}{CHAT}", json=chat(), headers={"X-Episode-Id": f"e{i}"}, timeout=10)
            assert response.status_code == 200 and response.headers["X-Replica"] == rid(good)
        assert states(gw)[rid(bad)]["healthy"] is False  # 3 consecutive failures opened the breaker
        assert "gateway_retries_total 3.0" in httpx.get(f"{gw}/metrics").text  # one retry per injected 500
        # A client error is the caller's fault: passed through, not retried.
        rejected = httpx.post(f"{gw}{CHAT}", json={"no": "messages"}, timeout=10)
        assert rejected.status_code == 400 and rejected.headers["X-Replica"] == rid(good)
    with serve_app(create_policy(ScriptedPolicySettings(fail_first_n=5))) as bad, \
            serve_app(create_gateway(settings_for([bad], max_retries=1, health_interval_s=60))) as gw:
        failed = httpx.post(f"{gw}{CHAT}", json=chat(), timeout=10)
        assert failed.status_code == 503 and "HTTP 500" in failed.json()["error"]


def test_stopped_replica_fails_over_and_is_marked_unhealthy(scripts_dir: Path) -> None:
    with ExitStack() as stack:
        alive = stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir))))
        doomed_port = free_port()
        doomed_ctx = serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir)), port=doomed_port)
        doomed = doomed_ctx.__enter__()
        gw = stack.enter_context(serve_app(create_gateway(settings_for([alive, doomed], health_interval_s=0.2,
                                                                       breaker_cooldown_s=1.0))))
        episode = next(f"e{i}" for i in range(10) if httpx.post(
            f"{gw}{CHAT}", json=chat(), headers={"X-Episode-Id": f"e{i}"}, timeout=10).headers["X-Replica"]
            == rid(doomed))
        doomed_ctx.__exit__(None, None, None)  # the replica goes away
        response = httpx.post(f"{gw}{CHAT}", json=chat(), headers={"X-Episode-Id": episode}, timeout=10)
        assert response.status_code == 200 and response.headers["X-Replica"] == rid(alive)
        wait_until(lambda: states(gw)[rid(doomed)]["healthy"] is False, 10, "the stopped replica marked unhealthy")
        assert states(gw)[rid(alive)]["healthy"] is True
        metrics = httpx.get(f"{gw}/metrics").text
        assert 'gateway_routing_decisions_total{decision="migrated"}' in metrics
        # Restarted on the same port: the health check re-admits it.
        with serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts_dir)), port=doomed_port):
            wait_until(lambda: states(gw)[rid(doomed)]["healthy"], 30, "the restarted replica re-admitted")


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


def test_admin_add_remove_drain_and_models(replicas: list[str]) -> None:
    first, second = replicas
    with serve_app(create_gateway(settings_for([first]))) as gw, httpx.Client(base_url=gw, timeout=10) as c:
        assert c.get("/v1/models").json()["data"][0]["id"] == "ui-tars-1.5-7b"
        assert c.get("/v1/models").headers["X-Replica"] == rid(first)
        assert c.post(CHAT, json=chat(), headers={"X-Episode-Id": "e"}).headers["X-Replica"] == rid(first)
        added = c.post("/admin/replicas", json={"url": second})
        assert added.status_code == 201 and added.json()["id"] == rid(second)
        # schemathesis found these: a host with control or non-ASCII characters, a port that is not a number
        for bad in ("ftp://x", "https://\ud818\udeb2\x1a@:\xab\xd7]", "https://\x8f[a\x1a", "http://h:99999",
                    "http://h:port", "http://", "http://a b:1"):
            refused = c.post("/admin/replicas", content=json.dumps({"url": bad}),  # \u-escapes lone surrogates
                             headers={"content-type": "application/json"})
            assert refused.status_code == 422, (bad, refused.text)
            assert "replica URL" in refused.text
        assert set(states(gw)) == {rid(first), rid(second)}
        drained = c.post(f"/admin/replicas/{rid(first)}/drain")
        assert drained.json()["draining"] is True
        moved = c.post(CHAT, json=chat(), headers={"X-Episode-Id": "e"})
        assert moved.headers["X-Replica"] == rid(second) and moved.headers["X-Model-Version"] == "v1"
        assert c.post(f"/admin/replicas/{rid(first)}/drain", params={"undrain": "true"}).json()["draining"] is False
        assert c.delete(f"/admin/replicas/{rid(second)}").status_code == 200
        assert c.delete("/admin/replicas/nope:1").status_code == 404
        assert c.post("/admin/replicas/nope:1/drain").status_code == 404
        assert set(states(gw)) == {rid(first)}
        back = c.post(CHAT, json=chat(), headers={"X-Episode-Id": "e"})
        assert back.status_code == 200 and back.headers["X-Replica"] == rid(first)
        assert c.get("/healthz").json()["routable"] == 1


def test_model_version_follows_a_reload(replicas: list[str]) -> None:
    with serve_app(create_gateway(settings_for(replicas[:1]))) as gw:
        assert httpx.post(f"{gw}{CHAT}", json=chat(), timeout=10).headers["X-Model-Version"] == "v0"
        httpx.post(f"{replicas[0]}/admin/reload", json={"model_version": "v5"}, timeout=10)
        assert httpx.post(f"{gw}{CHAT}", json=chat(), timeout=10).headers["X-Model-Version"] == "v5"
        assert states(gw)[rid(replicas[0])]["model_version"] == "v5"


def test_python_dash_m_serves(replicas: list[str]) -> None:
    port = free_port()
    env = {**os.environ, "GATEWAY_PORT": str(port), "GATEWAY_REPLICAS": ",".join(replicas)}
    proc = subprocess.Popen([sys.executable, "-m", "services.model_gateway"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: proc.poll() is None and http_ok(f"http://127.0.0.1:{port}/healthz"), 20,
                   "python -m services.model_gateway")
        response = httpx.post(f"http://127.0.0.1:{port}{CHAT}", json=chat(), timeout=10)
        assert response.status_code == 200 and response.headers["X-Replica"] in {rid(u) for u in replicas}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_request_body_relays_in_writes_of_at_least_min_write_and_replays_for_a_retry() -> None:
    parts = [bytes([i]) * 100_000 for i in range(5)]

    def receiver(messages: list[dict]) -> Any:
        async def receive() -> dict:
            return messages.pop(0)
        return receive

    async def scenario() -> None:
        body = RequestBody(receiver([{"type": "http.request", "body": p, "more_body": i < 4}
                                     for i, p in enumerate(parts)]))
        await body.first()
        assert not body.complete
        first = [chunk async for chunk in body.chunks(min_write=250_000)]
        assert [len(c) for c in first] == [300_000, 200_000] and b"".join(first) == b"".join(parts)
        replay = [c async for c in body.chunks(min_write=1)]  # a retry: from the start, what is there at once
        assert replay == [b"".join(parts)]
        assert await body.read() == b"".join(parts)
        gone = RequestBody(receiver([{"type": "http.request", "body": parts[0], "more_body": True},
                                     {"type": "http.disconnect"}]))
        with pytest.raises(ClientGone):
            _ = [c async for c in gone.chunks(min_write=1)]
        assert gone.gone
        await asyncio.wait_for(gone.wait_disconnect(), 1)  # returns at once: the client already left

    asyncio.run(scenario())
