"""The gateway's upstream HTTP/1.1 client (`services/model_gateway/upstream.py`) against real loopback servers:
a scripted replica under uvicorn, and raw asyncio TCP servers that answer in the ways a replica's connection
can behave (chunked, close-delimited, closed keep-alive, silent, cut short)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from services.model_gateway.upstream import UpstreamClient, UpstreamError
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.servers import serve_app

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
CHAT = "/v1/chat/completions"
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
HEADERS = {"content-type": "application/json"}


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """Read one request with a `content-length` body (what the client sends for bytes bodies); its body."""
    head = await reader.readuntil(b"\r\n\r\n")
    lengths = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
    assert lengths, f"no content-length in {head!r}"
    length = lengths[0]
    return await reader.readexactly(length)


class RawServer:
    """A loopback TCP server running `handler` per connection; counts connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.closed_by_client = asyncio.Event()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()


def test_keep_alive_reuses_one_connection_to_a_real_replica(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps({"instruction": "t", "replies": ["Action: wait()"] * 10}))

    async def run(url: str) -> None:
        client = UpstreamClient()
        for _ in range(5):
            response = await client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=5)
            assert response.status == 200 and response.content_type == "application/json"
            assert json.loads(await response.read())["choices"][0]["message"]["content"]
            response.release()
        pool = next(iter(client._pools.values()))
        assert pool.open == 1 and len(pool.idle) == 1
        client.close()

    with serve_app(create_policy(ScriptedPolicySettings(scripts_dir=tmp_path))) as url:
        asyncio.run(run(url))


def test_streamed_request_body_arrives_whole_with_and_without_content_length() -> None:
    async def echo(request: Request) -> JSONResponse:
        data = await request.body()
        return JSONResponse({"bytes": len(data), "sha": hashlib.sha256(data).hexdigest(),
                             "chunked": request.headers.get("transfer-encoding") == "chunked"})

    payload = bytes(range(256)) * 20_000  # 5 MB
    parts = [payload[i:i + 300_000] for i in range(0, len(payload), 300_000)]

    async def body() -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    async def run(url: str) -> None:
        client = UpstreamClient()
        for headers, chunked in (({}, True), ({"content-length": str(len(payload))}, False)):
            response = await client.post(url + "/echo", body(), headers, connect_timeout=2, read_timeout=5)
            answer = json.loads(await response.read())
            response.release()
            assert answer == {"bytes": len(payload), "sha": hashlib.sha256(payload).hexdigest(), "chunked": chunked}
        client.close()

    with serve_app(Starlette(routes=[Route("/echo", echo, methods=["POST"])])) as url:
        asyncio.run(run(url))


def test_chunked_and_close_delimited_answers_are_read_to_their_end() -> None:
    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                     b"6\r\ndata: \r\n3\r\nab\n\r\n0\r\n\r\n")
        await writer.drain()
        await reader.read()  # keep-alive: the client holds the connection

    async def until_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"a\": 1}")
        await writer.drain()

    async def run() -> None:
        client = UpstreamClient()
        async with RawServer(chunked) as url:
            response = await client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=5)
            assert response.content_type == "text/event-stream"
            assert [c async for c in response.iter_chunks()] == [b"data: ", b"ab\n"]
            response.release()
        async with RawServer(until_close) as url:
            response = await client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=5)
            assert await response.read() == b'{"a": 1}'
            response.release()
            assert not next(p for p in client._pools.values() if p.port == int(url.rsplit(":", 1)[1])).idle
        client.close()

    asyncio.run(run())


def test_interim_answers_are_skipped() -> None:
    async def interim_first(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):  # two requests on the same connection
            await read_request(reader)
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n"
                         b"HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
            await writer.drain()
        await reader.read()

    async def run() -> None:
        client = UpstreamClient()
        server = RawServer(interim_first)
        async with server as url:
            for _ in range(2):
                response = await client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=5)
                assert (response.status, "link" in response.headers, await response.read()) == (201, False, b"{}")
                response.release()
            assert server.connections == 1
        client.close()

    asyncio.run(run())


def test_bytes_after_an_answer_retire_its_connection() -> None:
    stray = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n\r\n"
    idle_stray_sent = asyncio.Event()

    async def with_stray(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok" + stray)  # stray bytes with the answer
        await writer.drain()
        await reader.read()

    async def stray_when_idle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        await idle_stray_sent.wait()
        writer.write(stray)  # on the idle connection
        await writer.drain()
        await reader.read()

    async def run() -> None:
        for handler in (with_stray, stray_when_idle):
            client = UpstreamClient()
            server = RawServer(handler)
            async with server as url:
                for _ in range(2):
                    response = await client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=5)
                    assert (response.status, await response.read()) == (200, b"ok")
                    response.release()
                    pool = next(iter(client._pools.values()))
                    if handler is stray_when_idle and not idle_stray_sent.is_set():
                        assert pool.open == 1
                        idle_stray_sent.set()
                    deadline = asyncio.get_running_loop().time() + 5
                    while pool.open and asyncio.get_running_loop().time() < deadline:  # retired at once
                        await asyncio.sleep(0.01)
                    assert pool.open == 0
                assert server.connections == 2
            client.close()

    asyncio.run(run())


def test_a_keep_alive_connection_the_replica_closed_is_resent_on_a_new_one() -> None:
    async def one_answer_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")  # keep-alive announced...
        await writer.drain()
        await read_request(reader)  # ...but the next request on it is dropped: closed unanswered

    async def body() -> AsyncIterator[bytes]:
        yield BODY

    async def run() -> None:
        client = UpstreamClient()
        server = RawServer(one_answer_then_close)
        async with server as url:
            for _ in range(3):
                response = await client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=5)
                assert await response.read() == b"ok"
                response.release()
            assert server.connections == 3  # 1st new, 2nd and 3rd resent on a new one after the stale one
            sized = {**HEADERS, "content-length": str(len(BODY))}
            replayable = await client.post(url + CHAT, body, sized, connect_timeout=2, read_timeout=5)
            assert await replayable.read() == b"ok"  # a body function is called again for the resend
            replayable.release()
            with pytest.raises(UpstreamError, match="closed an idle connection"):  # a bare iterator cannot be
                await client.post(url + CHAT, body(), sized, connect_timeout=2, read_timeout=5)
        client.close()

    asyncio.run(run())


def test_silent_replica_times_out_and_the_connection_is_closed() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()  # until the client closes
        server.closed_by_client.set()

    server = RawServer(silent)

    async def run() -> None:
        client = UpstreamClient()
        async with server as url:
            with pytest.raises(TimeoutError):
                await client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=0.2)
            await asyncio.wait_for(server.closed_by_client.wait(), 5)
            assert next(iter(client._pools.values())).open == 0

    asyncio.run(run())


def test_cancelled_request_closes_its_connection() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()
        server.closed_by_client.set()

    server = RawServer(silent)

    async def run() -> None:
        client = UpstreamClient()
        async with server as url:
            task = asyncio.create_task(client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=60))
            while server.connections == 0:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.wait_for(server.closed_by_client.wait(), 5)  # the replica sees the abort

    asyncio.run(run())


def test_answer_cut_short_and_refused_connection_are_upstream_errors() -> None:
    async def cut_short(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten b")
        await writer.drain()

    async def run() -> None:
        client = UpstreamClient()
        async with RawServer(cut_short) as url:
            response = await client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=5)
            with pytest.raises(UpstreamError, match="before the answer ended"):
                await response.read()
            response.release()
        with pytest.raises(UpstreamError, match="cannot connect"):
            await client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=5)
        with pytest.raises(UpstreamError, match="only http://"):
            await client.post("https://example.invalid/v1", BODY, HEADERS, connect_timeout=2, read_timeout=5)

    asyncio.run(run())


def test_requests_beyond_the_connection_limit_wait_for_one() -> None:
    async def slow_keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            await asyncio.sleep(0.05)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            await writer.drain()

    server = RawServer(slow_keep_alive)

    async def one(client: UpstreamClient, url: str) -> bytes:
        response = await client.post(url + CHAT, BODY, HEADERS, connect_timeout=2, read_timeout=5)
        try:
            return await response.read()
        finally:
            response.release()

    async def run() -> None:
        client = UpstreamClient(limit_per_replica=1)
        async with server as url:
            assert await asyncio.gather(*(one(client, url) for _ in range(4))) == [b"ok"] * 4
            assert server.connections == 1
        client.close()

    asyncio.run(run())
