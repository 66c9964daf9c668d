"""The request body relay (`services/model_gateway/body.py`) over a scripted ASGI `receive`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.model_gateway.body import ClientGone, RequestBody


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
