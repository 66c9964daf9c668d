"""The request body as the client sends it, relayed to the replica while it arrives and kept for retries.

A screenshot-sized chat request is megabytes. Reading it whole before opening the upstream request (what the
gateway did, and what nginx does by default) puts a full second copy of the upload on the request's latency;
relaying each ASGI `http.request` message as it arrives (nginx's `proxy_request_buffering off`) overlaps the
two. The chunks are kept, so an attempt that fails before the first byte of the response can be retried on
another replica from the start of the body.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from starlette.types import Message, Receive

#: Bytes the relay gathers before each write upstream. Relaying every ASGI message as it came (uvicorn hands
#: over ~64 KiB at a time) left 1-2% of 4 MB requests waiting ~25 ms more at the replica (TCP acknowledging
#: the many short writes late); 256 KiB writes brought the 4 MB p99 from ~25 to ~5-12 ms over the direct path
#: with the same p50 (bench/gateway_overhead.py).
RELAY_WRITE_BYTES = 256 * 1024


class ClientGone(Exception):
    """The client disconnected before its request body was complete."""


class RequestBody:
    """One request's body over ASGI `receive`: `first()` once, then `chunks()` per attempt or `read()`.

    One reader at a time: attempts are sequential, and `wait_disconnect` only reads `receive` once the body
    is complete. Memory: the body once (its chunks, not joined unless `read()` is called).
    """

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._chunks: list[bytes] = []
        self._joined: bytes | None = None
        self.complete = False
        self.gone = False
        self._settled = asyncio.Event()  # complete or gone

    @classmethod
    def of_bytes(cls, data: bytes, receive: Receive) -> RequestBody:
        """A complete body of `data` (a caller that read or built the body itself); `receive` is the request's
        ASGI channel, read only by `wait_disconnect`."""
        body = cls(receive)
        body._chunks = [data] if data else []
        body.complete = True
        body._settled.set()
        return body

    async def _next(self) -> None:
        """Read one ASGI message into the body. Raises: ClientGone on `http.disconnect`."""
        message: Message = await self._receive()
        if message["type"] == "http.disconnect":
            self.gone = True
            self._settled.set()
            raise ClientGone("the client disconnected while sending its request body")
        chunk = message.get("body", b"")
        if chunk:
            self._chunks.append(chunk)
        if not message.get("more_body", False):
            self.complete = True
            self._settled.set()

    async def first(self) -> None:
        """Read the first message: a small body is then complete. Raises: ClientGone."""
        if not self._chunks and not self.complete:
            await self._next()

    async def read(self) -> bytes:
        """The whole body (waits for the rest). Raises: ClientGone."""
        while not self.complete:
            await self._next()
        if self._joined is None:
            self._joined = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
        return self._joined

    async def chunks(self, min_write: int = RELAY_WRITE_BYTES) -> AsyncIterator[bytes]:
        """The body from its first byte, in writes of at least `min_write` bytes (the last one may be
        shorter): the chunks received so far, then new ones as they arrive.

        Raises: ClientGone.
        """
        index = 0
        pending: list[bytes] = []
        size = 0
        while True:
            while index < len(self._chunks):
                pending.append(self._chunks[index])
                size += len(self._chunks[index])
                index += 1
            if pending and (size >= min_write or self.complete):
                yield pending[0] if len(pending) == 1 else b"".join(pending)
                pending, size = [], 0
            if self.complete:
                return
            await self._next()

    async def wait_disconnect(self) -> None:
        """Return when the client disconnects: at once if it left mid-body, else by reading `receive` once the
        body is complete (after the body, the next ASGI message is the disconnect)."""
        await self._settled.wait()
        while not self.gone:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self.gone = True
