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
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from services.model_gateway.upstream_connection import (
    Body,
    StaleConnection,
    UpstreamConnection,
    UpstreamError,
    UpstreamResponse,
)

#: Idle connections older than this are closed instead of reused (seconds); uvicorn's default keep-alive is 5 s,
#: vLLM's server is uvicorn: a connection idle longer is likely closed on the other end.
KEEPALIVE_S = 4.0

__all__ = ["Body", "UpstreamClient", "UpstreamError", "UpstreamResponse"]


class _ReplicaPool:
    """Keep-alive connections to one replica, at most `limit` open (more requests wait for one)."""

    def __init__(self, host: str, port: int, limit: int) -> None:
        self.host, self.port, self.limit = host, port, limit
        self.idle: collections.deque[UpstreamConnection] = collections.deque()
        self.open = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self, connect_timeout: float, fresh: bool = False) -> UpstreamConnection:
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
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():  # woken, then cancelled: pass the turn on
                    self._wake_one()
                raise
            return await self.acquire(connect_timeout, fresh)
        self.open += 1
        try:
            loop = asyncio.get_running_loop()
            _, connection = await asyncio.wait_for(
                loop.create_connection(lambda: UpstreamConnection(self), self.host, self.port), connect_timeout)
        except OSError as exc:
            self._closed_one()
            raise UpstreamError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        except BaseException:
            self._closed_one()
            raise
        return connection

    def put_back(self, connection: UpstreamConnection) -> None:
        self.idle.append(connection)
        self._wake_one()

    def forget(self, connection: UpstreamConnection) -> None:
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
        current = body() if callable(body) else body
        lines = [b"POST ", target, *(f"{name}: {value}\r\n".encode("latin-1") for name, value in headers.items())]
        chunked = False
        if isinstance(current, bytes):
            lines.append(b"content-length: %d\r\n" % len(current))
        elif not any(name.lower() == "content-length" for name in headers):
            chunked = True
            lines.append(b"transfer-encoding: chunked\r\n")
        head = b"".join([*lines, b"\r\n"])  # the same on a resend: only the body is made again
        for attempt in range(2):
            connection = await pool.acquire(connect_timeout, fresh=attempt > 0)
            try:
                return await connection.send(head, current, chunked, read_timeout)
            except StaleConnection:
                if attempt or not (isinstance(current, bytes) or callable(body)):
                    raise
            current = body() if callable(body) else current  # the body again, from its first byte
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close every idle connection (in-flight ones close when their answers are released)."""
        for pool in self._pools.values():
            pool.close()
