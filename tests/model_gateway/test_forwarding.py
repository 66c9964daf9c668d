"""Forwarding a completion (`services/model_gateway/forwarding.py`) over scripted-policy replicas (mocks of vLLM GPU
servers) and small replica apps, real HTTP on loopback: bodies byte for byte, retries, failover, deadlines,
streaming, no resend after bytes were sent, bounded memory under a slow reader."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import psutil
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from common.polling import free_port, http_ok, wait_until
from services.model_gateway.server import create_app as create_gateway
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.model_gateway.helpers import CHAT, chat, policies, rid, settings_for, states
from tests.servers import serve_app

REPO = Path(__file__).resolve().parents[2]


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


def test_deadline_header_and_client_gone(scripts_dir: Path) -> None:
    with policies(scripts_dir, 2, latency_ms=1500) as urls:
        with serve_app(create_gateway(settings_for(urls))) as gw:
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


class BreakingReplica:
    """A replica on a raw TCP socket (a mock of a vLLM server that fails mid-request; no model here): it answers
    `GET /health` and breaks every POST after reading it whole, `mode` "close" by closing the connection
    unanswered, "cut" by sending a response head announcing 1,000 bytes and 10 of them, then closing ("cut-long":
    announcing 10 MB, a response the gateway relays as it arrives).
    `posts` counts the POSTs it read."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.posts = 0
        replica = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                while line := self.rfile.readline():
                    head = [line]
                    while (header := self.rfile.readline()) not in (b"\r\n", b""):
                        head.append(header)
                    length = next((int(h.split(b":", 1)[1]) for h in head if h.lower().startswith(b"content-length")),
                                  0)
                    self.rfile.read(length)
                    if line.startswith(b"GET "):
                        self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                        continue
                    replica.posts += 1
                    if replica.mode.startswith("cut"):
                        length = b"10000000" if replica.mode == "cut-long" else b"1000"
                        self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                         b"content-length: " + length + b"\r\n\r\n{\"choices\"")
                    return  # the connection closes

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> BreakingReplica:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("mode", ["close", "cut", "cut-long"])
def test_a_post_is_never_resent_after_bytes_were_sent(mode: str) -> None:
    with BreakingReplica(mode) as replica, \
            serve_app(create_gateway(settings_for([replica.url], health_interval_s=60, max_retries=2))) as gw:
        if mode in ("close", "cut"):  # nothing went to the client yet: the gateway's own 502, not a retry's 503
            response = httpx.post(f"{gw}{CHAT}", json=chat(), timeout=10)
            assert response.status_code == 502, response.text
            assert "not resent" in response.json()["error"] and response.headers["X-Replica"] == ""
        else:  # the response had started: the client's connection is closed, never a clean (short) end
            with pytest.raises(httpx.RemoteProtocolError, match="incomplete|without sending complete"):
                httpx.post(f"{gw}{CHAT}", json=chat(), timeout=10)
        assert replica.posts == 1
        assert "gateway_retries_total 0.0" in httpx.get(f"{gw}/metrics", timeout=5).text


class StreamingReplica:
    """A replica app (a mock of a vLLM server streaming an answer; no model here) that answers a completion with
    `X-Size` bytes of `text/event-stream` in 64 KiB chunks; `sent` counts the bytes handed to its server, whose
    send blocks while the connection's buffers are full (uvicorn's flow control)."""

    def __init__(self) -> None:
        self.sent = 0
        self.app = Starlette(routes=[Route(CHAT, self.chat, methods=["POST"]),
                                     Route("/health", lambda _: Response(), methods=["GET"])])

    async def chat(self, request: Request) -> StreamingResponse:
        await request.body()
        size = int(request.headers["x-size"])

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, size, 65536):
                chunk = b"x" * min(65536, size - start)
                self.sent += len(chunk)
                yield chunk

        return StreamingResponse(chunks(), media_type="text/event-stream")


def hold_streams(client: httpx.Client, stack: ExitStack, sizes: list[int]) -> list[tuple[int, Iterator[bytes]]]:
    """Open one streamed completion per size and read only its first chunk: (bytes read, the rest's iterator)."""
    held = []
    for size in sizes:
        response = stack.enter_context(client.stream("POST", CHAT, json=chat(), headers={"X-Size": str(size)}))
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        chunks = response.iter_raw()
        held.append((len(next(chunks)), chunks))
    return held


def settle(replica: StreamingReplica) -> int:
    """Wait until the replica's send has stopped (blocked, or everything sent); the bytes it sent."""
    last = [-1]

    def settled() -> bool:
        now = replica.sent
        same, last[0] = now == last[0], now
        return same

    wait_until(settled, 60, "the replica's send to stop", interval_s=0.5)
    return replica.sent


def test_slow_readers_of_streamed_answers_do_not_make_the_gateway_buffer_them() -> None:
    """4 MB answers fit in loopback's kernel socket buffers (Linux autotunes a send buffer up to
    `tcp_wmem`'s 4 MB), so a buffering gateway is told apart by its RSS with six slow readers at once (24 MB
    held); the replica's send blocking is shown with one slow reader of a 64 MB answer."""
    mb = 1024 * 1024
    replica = StreamingReplica()
    port = free_port()
    with serve_app(replica.app) as url:
        env = {**os.environ, "GATEWAY_PORT": str(port), "GATEWAY_REPLICAS": url, "GATEWAY_HEALTH_INTERVAL_S": "60",
               "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen([sys.executable, "-m", "services.model_gateway"], cwd=REPO, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            gw = f"http://127.0.0.1:{port}"
            wait_until(lambda: proc.poll() is None and http_ok(f"{gw}/healthz"), 30, "python -m services.model_gateway")
            gateway = psutil.Process(proc.pid)
            # Small receive buffers on the readers' side: the kernel absorbs less for them.
            transport = httpx.HTTPTransport(socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)])
            with httpx.Client(base_url=gw, timeout=60, transport=transport) as client:
                for _ in range(3):  # fast 4 MB relays first: the gateway's heap reaches its working size
                    assert len(client.post(CHAT, json=chat(), headers={"X-Size": str(4 * mb)}).content) == 4 * mb
                before = gateway.memory_info().rss
                with ExitStack() as stack:
                    held = hold_streams(client, stack, [4 * mb] * 6)
                    assert settle(replica) > 0
                    growth = gateway.memory_info().rss - before
                    assert [first + sum(len(c) for c in rest) for first, rest in held] == [4 * mb] * 6
                # Buffering them would take >= 24 MB; relaying, 2-7 MB were measured (the heap's own churn).
                assert growth < 12 * mb, f"gateway RSS grew {growth} bytes while 6 readers held 4 MB answers"
                replica.sent = 0
                before = gateway.memory_info().rss
                with ExitStack() as stack:
                    [(first, rest)] = hold_streams(client, stack, [64 * mb])
                    sent = settle(replica)
                    growth = gateway.memory_info().rss - before
                    assert first + sum(len(c) for c in rest) == 64 * mb
                # The kernel's socket buffers on the two hops took 12-25 MB in runs here; the rest waited.
                assert sent < 48 * mb, f"the replica sent {sent} bytes of 64 MB to a stalled reader: no backpressure"
                assert growth < 8 * mb, f"gateway RSS grew {growth} bytes while a reader held a 64 MB answer"
        finally:
            proc.terminate()
            proc.wait(timeout=10)
