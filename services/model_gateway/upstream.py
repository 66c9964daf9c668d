"""The gateway's HTTP/1.1 client to its replicas: keep-alive connections per replica, httptools' C parser.

Why not aiohttp's `ClientSession` (the gateway's client until 2026-11): on a 2 KB chat request its request
building (URL, header multidicts, payload registry, tracing hooks), writer and response objects were ~38 % of
the gateway's busy time in a py-spy profile, and the gateway's latency over the direct path was 1.4-1.6x
nginx's (issue 8: <= 1.5x). A proxy to known replicas needs much less: one request line, the forwarded
headers, the body's bytes, and a parser for the answer. This client does exactly that over `asyncio.Protocol`
with `httptools.HttpResponseParser` (the parser uvicorn uses on the server side). HTTP semantics follow RFC
9112: `Content-Length` or chunked request bodies, answers delimited by length, chunks or connection close.

Errors: `UpstreamError` (an `OSError`: connect refused, reset, closed mid-answer, malformed answer) and
`TimeoutError` (connect or read timeout). A request sent on a reused keep-alive connection that the replica
had closed meanwhile (nothing of the answer arrived) is sent once more on a new connection: a stale
connection is not the replica's failure.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from typing import cast
from urllib.parse import urlsplit

import httptools

#: Idle connections older than this are closed instead of reused (seconds); uvicorn's default keep-alive is 5 s,
#: vLLM's server is uvicorn: a connection idle longer is likely closed on the other end.
KEEPALIVE_S = 4.0


class UpstreamError(OSError):
    """The replica's connection failed: refused, reset, closed before the answer ended, or a malformed answer."""


class _Stale(UpstreamError):
    """A reused connection closed before any byte of the answer: safe to send the request again."""


Body = bytes | AsyncIterable[bytes]


class UpstreamResponse:
    """An answer's status and headers; its body via `read()` or `iter_chunks()`, then `release()` (always).

    `headers`: names lower-cased (bytes decoded as latin-1), in arrival order; a repeated name keeps the last.
    """

    def __init__(self, connection: _Connection, status: int, headers: dict[str, str]) -> None:
        self._connection = connection
        self.status = status
        self.headers = headers
        self.content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()

    async def read(self) -> bytes:
        """The whole body. Raises: UpstreamError, TimeoutError (no byte for `read_timeout` seconds)."""
        parts = [chunk async for chunk in self.iter_chunks()]
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive (chunked encoding removed). Raises: UpstreamError, TimeoutError."""
        connection = self._connection
        while True:
            while connection.body:
                yield connection.body.popleft()
            if connection.message_done:
                return
            await connection.wait_event()

    def release(self) -> None:
        """Give the connection back for reuse if the answer was read to its end, else close it. Idempotent."""
        self._connection.finish()


class _Connection(asyncio.Protocol):
    """One keep-alive connection to a replica; one request at a time."""

    def __init__(self, pool: _ReplicaPool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.reused = False
        self.idle_since = 0.0
        self.closed = False
        self.error: BaseException | None = None
        self.got_bytes = False
        self.headers_done = False
        self.message_done = False
        self.in_use = False
        self.keep_alive = False
        self._interim = False
        self._header_list: list[tuple[bytes, bytes]] = []
        self.body: collections.deque[bytes] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._read_timeout = 0.0
        self._paused = False
        self._drain: asyncio.Future[None] | None = None
        self._counted = True  # in its pool's `open` count until closed

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's subclasses

    def data_received(self, data: bytes) -> None:
        self.got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(UpstreamError("the replica switched protocols (upgrade is not proxied)"))
        except httptools.HttpParserError as exc:
            self._fail(UpstreamError(f"malformed HTTP answer from the replica: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.in_use:  # an idle connection the replica closed
            self.abort()
        elif not self.message_done:
            if self.headers_done and self.parser.get_status_code() and not self._delimited():
                self.message_done = True  # an answer delimited by the connection's close (RFC 9112 6.3)
                self._wake()
            elif self.reused and not self.got_bytes:
                self._fail(_Stale(f"the replica closed an idle connection ({exc!r})"))
            else:
                self._fail(UpstreamError(f"the replica closed the connection before the answer ended ({exc!r})"))
        self._wake_drain()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_drain()

    # -- httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_list.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # interim (100 Continue, 103 Early Hints): the answer follows
            self._interim = True
            self._header_list = []
            return
        self.keep_alive = self.parser.should_keep_alive()  # llhttp answers this only until the message ends
        self.headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self._wake()

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        self.message_done = True
        self._wake()

    # -- request side
    def _delimited(self) -> bool:
        return any(n.lower() in (b"content-length", b"transfer-encoding") for n, _ in self._header_list)

    def _fail(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc
        if self.transport is not None:
            self.transport.abort()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _wake_drain(self) -> None:
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    async def wait_event(self) -> None:
        """Wait for the parser's next event (head, body bytes, end) or a failure, at most the read timeout.

        Raises: UpstreamError, TimeoutError."""
        if self.error is not None:
            raise self.error
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        timer = loop.call_later(self._read_timeout, self._time_out, waiter)
        try:
            await waiter
        except BaseException:
            self.abort()  # cancelled (the client left) or timed out: the replica stops generating
            raise
        finally:
            timer.cancel()
            self._waiter = None
        if self.error is not None:
            raise self.error

    def _time_out(self, waiter: asyncio.Future[None]) -> None:
        if not waiter.done():
            waiter.set_exception(TimeoutError(f"no answer from the replica within {self._read_timeout:g} s"))

    async def _write(self, data: bytes) -> None:
        assert self.transport is not None
        if self.error is not None:
            raise self.error
        self.transport.write(data)
        if self._paused and not self.closed:
            self._drain = asyncio.get_running_loop().create_future()
            try:
                await self._drain
            finally:
                self._drain = None
            if self.error is not None:
                raise self.error

    async def send(self, head: bytes, body: Body, chunked: bool, read_timeout: float) -> UpstreamResponse:
        """Write one request and wait for the answer's head. Raises: UpstreamError, TimeoutError."""
        self.in_use = True
        self._read_timeout = read_timeout
        assert self.transport is not None
        try:
            if isinstance(body, bytes):
                self.transport.write(head + body if len(body) < 65536 else head)
                if len(body) >= 65536:
                    await self._write(body)
            else:
                await self._write(head)
                async for chunk in body:
                    if chunk:
                        await self._write(b"%x\r\n%b\r\n" % (len(chunk), chunk) if chunked else chunk)
                if chunked:
                    await self._write(b"0\r\n\r\n")
            while not self.headers_done:
                await self.wait_event()
        except BaseException:
            self.abort()
            raise
        headers: dict[str, str] = {}
        for name, value in self._header_list:
            headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        return UpstreamResponse(self, self.parser.get_status_code(), headers)

    def finish(self) -> None:
        """After an answer: back to the pool if read to its end on a keep-alive connection, else closed."""
        if not self.in_use:
            return
        self.in_use = False
        if self.message_done and self.error is None and not self.closed and self.keep_alive:
            self.parser = httptools.HttpResponseParser(self)
            self.got_bytes = self.headers_done = self.message_done = self.keep_alive = False
            self._header_list = []
            self.body.clear()
            self.reused = True
            self.idle_since = time.monotonic()
            self.pool.put_back(self)
        else:
            self.abort()

    def abort(self) -> None:
        """Close the connection at once (a replica aborts a request whose connection closes). Idempotent."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        if self._counted:
            self._counted = False
            self.pool.forget(self)


class _ReplicaPool:
    """Keep-alive connections to one replica, at most `limit` open (more requests wait for one)."""

    def __init__(self, host: str, port: int, limit: int) -> None:
        self.host, self.port, self.limit = host, port, limit
        self.idle: collections.deque[_Connection] = collections.deque()
        self.open = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self, connect_timeout: float, fresh: bool = False) -> _Connection:
        """An idle connection (newest first) unless `fresh`, else a new one. Raises: UpstreamError, TimeoutError."""
        now = time.monotonic()
        while self.idle and not fresh:
            connection = self.idle.pop()
            if not connection.closed and now - connection.idle_since < KEEPALIVE_S:
                return connection
            connection.abort()
        if self.open >= self.limit:  # wait for a connection to come back or close, then look again
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
            return await self.acquire(connect_timeout, fresh)
        self.open += 1
        try:
            loop = asyncio.get_running_loop()
            _, connection = await asyncio.wait_for(
                loop.create_connection(lambda: _Connection(self), self.host, self.port), connect_timeout)
        except OSError as exc:
            self._closed_one()
            raise UpstreamError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        except BaseException:
            self._closed_one()
            raise
        return connection

    def put_back(self, connection: _Connection) -> None:
        self.idle.append(connection)
        self._wake_one()

    def forget(self, connection: _Connection) -> None:
        """A connection closed: no longer idle nor counted."""
        if connection in self.idle:
            self.idle.remove(connection)
        self._closed_one()

    def _closed_one(self) -> None:
        self.open -= 1
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def close(self) -> None:
        while self.idle:
            self.idle.pop().abort()


class UpstreamClient:
    """POSTs to replicas over kept-alive connections (at most `limit_per_replica` open per replica)."""

    def __init__(self, limit_per_replica: int = 1000) -> None:
        self._limit = limit_per_replica
        self._pools: dict[tuple[str, int], _ReplicaPool] = {}
        self._targets: dict[str, tuple[tuple[str, int], bytes]] = {}

    def _target(self, url: str) -> tuple[_ReplicaPool, bytes]:
        """The pool for `url`'s host and port, and its request target and `Host` header (cached per URL)."""
        cached = self._targets.get(url)
        if cached is None:
            parts = urlsplit(url)
            if parts.scheme != "http" or not parts.hostname:
                raise UpstreamError(f"replica URL {url!r}: only http://host[:port]/path is supported")
            port = parts.port or 80
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            netloc = parts.netloc.rsplit("@", 1)[-1]
            cached = ((parts.hostname, port), f"{path} HTTP/1.1\r\nhost: {netloc}\r\n".encode("latin-1"))
            self._targets[url] = cached
        key, target = cached
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _ReplicaPool(key[0], key[1], self._limit)
        return pool, target

    async def post(self, url: str, body: Body | Callable[[], Body], headers: Mapping[str, str], *,
                   connect_timeout: float, read_timeout: float) -> UpstreamResponse:
        """Send `POST url` with `body` (bytes, an async iterable of bytes, or a function returning either: called
        again if the request must be resent on a new connection) and wait for the answer's head.

        `headers` are sent as given (no hop-by-hop filtering here) plus `content-length` for bytes bodies, and
        `transfer-encoding: chunked` for an iterable when no `content-length` is given. `read_timeout` bounds
        each wait for the replica (head, then every body chunk), seconds.
        Raises: UpstreamError, TimeoutError; CancelledError closes the connection.
        """
        pool, target = self._target(url)
        for attempt in range(2):
            current = body() if callable(body) else body
            lines = [b"POST ", target]
            chunked = False
            for name, value in headers.items():
                lines.append(f"{name}: {value}\r\n".encode("latin-1"))
            if isinstance(current, bytes):
                lines.append(b"content-length: %d\r\n" % len(current))
            elif not any(name.lower() == "content-length" for name in headers):
                chunked = True
                lines.append(b"transfer-encoding: chunked\r\n")
            lines.append(b"\r\n")
            connection = await pool.acquire(connect_timeout, fresh=attempt > 0)
            try:
                return await connection.send(b"".join(lines), current, chunked, read_timeout)
            except _Stale:
                if attempt or not (isinstance(current, bytes) or callable(body)):
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close every idle connection (in-flight ones close when their answers are released)."""
        for pool in self._pools.values():
            pool.close()
