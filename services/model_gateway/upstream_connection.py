"""One keep-alive HTTP/1.1 connection to a replica (`asyncio.Protocol` + httptools' response parser) and the
answer read from it: the lower half of the gateway's upstream client (`upstream.py` pools these).

Answers are delimited by length, chunks or the connection's close (RFC 9112 section 6.3); interim 1xx answers
are skipped; bytes after an answer retire the connection. Errors: `UpstreamError` (an `OSError`), and
`TimeoutError` when no byte arrives for the read timeout.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterable, AsyncIterator
from typing import Protocol, cast

import httptools


class UpstreamError(OSError):
    """The replica's connection failed: refused, reset, closed before the answer ended, or a malformed answer."""


class StaleConnection(UpstreamError):
    """A reused connection closed before any byte of the answer: safe to send the request again."""


#: A request body: bytes, or an async iterable of them (relayed as it arrives).
Body = bytes | AsyncIterable[bytes]


class ConnectionPool(Protocol):
    """What a connection tells its pool (`upstream._ReplicaPool`)."""

    def put_back(self, connection: UpstreamConnection) -> None: ...

    def forget(self, connection: UpstreamConnection) -> None: ...


class UpstreamResponse:
    """An answer's status and headers; its body via `read()` or `iter_chunks()`, then `release()` (always).

    `headers`: names lower-cased (bytes decoded as latin-1), in arrival order; a repeated name keeps the last.
    """

    def __init__(self, connection: UpstreamConnection, status: int, headers: dict[str, str]) -> None:
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


class UpstreamConnection(asyncio.Protocol):
    """One keep-alive connection to a replica; one request at a time."""

    def __init__(self, pool: ConnectionPool) -> None:
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
        self._stray = False
        self.status = 0
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
        if not self.in_use:  # bytes on an idle connection (a late 408, garbage): never reuse it
            self.abort()
            return
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
            if self.headers_done and not self._delimited():
                self.message_done = True  # an answer delimited by the connection's close (RFC 9112 6.3)
                self._wake()
            elif self.reused and not self.got_bytes:
                self._fail(StaleConnection(f"the replica closed an idle connection ({exc!r})"))
            else:
                self._fail(UpstreamError(f"the replica closed the connection before the answer ended ({exc!r})"))
        self._wake_drain()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_drain()

    # -- httptools callbacks
    def on_message_begin(self) -> None:
        if self.message_done:  # bytes after the answer, with it (a stray 408...): ignored, and not reusable
            self.keep_alive = False
            self._stray = True

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._stray:
            self._header_list.append((name, value))

    def on_headers_complete(self) -> None:
        if self._stray:
            return
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # interim (100 Continue, 103 Early Hints): the answer follows
            self._interim = True
            self._header_list = []
            return
        self.status = status
        self.keep_alive = self.parser.should_keep_alive()  # llhttp answers this only until the message ends
        self.headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        if not self._stray:
            self.body.append(body)
            self._wake()

    def on_message_complete(self) -> None:
        if self._stray:
            return
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
                small = len(body) < 65536  # head and body in one write
                await self._write(head + body if small else head)
                if not small:
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
        return UpstreamResponse(self, self.status, headers)

    def finish(self) -> None:
        """After an answer: back to the pool if read to its end on a keep-alive connection, else closed."""
        if not self.in_use:
            return
        self.in_use = False
        if self.message_done and self.error is None and not self.closed and self.keep_alive:
            self.parser = httptools.HttpResponseParser(self)
            self.got_bytes = self.headers_done = self.message_done = self.keep_alive = self._stray = False
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
