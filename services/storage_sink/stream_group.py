"""The sink's side of one Redis Stream consumer group: read, take over, acknowledge (SPEC section 7).

Each round a consumer first takes over entries another consumer left pending for longer than
`claim_idle_ms` (XAUTOCLAIM: a dead sink's work), then reads new ones (XREADGROUP `>`), or after a
failed write its own pending ones (XREADGROUP `0`), up to `batch` entries. An entry is acknowledged
and deleted only after its objects are written (one XACK + XDEL per batch), so XLEN is the unpersisted
backlog that runners watch for backpressure.
"""

from __future__ import annotations

from typing import Any

import redis
from prometheus_client import Counter

from common import keys
from services.storage_sink.settings import SinkSettings

CLAIMED = Counter("cua_sink_claimed_total", "Entries taken over from idle consumers")

#: Stream entries as redis-py returns them: (entry id, fields), both as bytes.
Entries = list[tuple[bytes, dict[bytes, bytes]]]


def in_stream_order(*batches: Entries) -> Entries:
    """The entries of `batches` once each (by id), in stream order."""
    unique = {entry_id: fields for batch in batches for entry_id, fields in batch}
    return sorted(unique.items(), key=lambda item: tuple(int(part) for part in item[0].split(b"-")))


class StreamGroup:
    """Consumer `settings.consumer` of group `keys.SINK_GROUP` on `stream`. Raises redis.RedisError
    from every call (the consumer's loop retries)."""

    def __init__(self, client: redis.Redis, stream: str, settings: SinkSettings) -> None:
        self.client = client
        self.stream = stream
        self.settings = settings

    def ensure(self) -> None:
        """Create the consumer group (and the stream) if missing."""
        try:
            self.client.xgroup_create(self.stream, keys.SINK_GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def claim(self) -> Entries:
        """Up to `batch` entries idle for `claim_idle_ms` on other consumers, now this one's. Entries
        trimmed while pending (no fields: nothing to write) are acknowledged on the way."""
        result: Any = self.client.xautoclaim(self.stream, keys.SINK_GROUP, self.settings.consumer,
                                             min_idle_time=self.settings.claim_idle_ms, start_id="0-0",
                                             count=self.settings.batch)
        entries = [(eid, fields) for eid, fields in result[1] if fields]
        deleted = [eid for eid, fields in result[1] if not fields]
        if deleted:
            self.client.xack(self.stream, keys.SINK_GROUP, *deleted)
        CLAIMED.inc(len(entries))
        return entries

    def read(self, block_ms: int | None, entry_id: str = ">") -> Entries:
        """Up to `batch` new entries (`>`, blocking up to `block_ms` ms; None: no wait), or this
        consumer's own pending ones (`0`)."""
        result: Any = self.client.xreadgroup(keys.SINK_GROUP, self.settings.consumer, {self.stream: entry_id},
                                             count=self.settings.batch, block=block_ms)
        return [(eid, fields) for _, messages in (result or []) for eid, fields in messages if fields]

    def done(self, *entry_ids: bytes) -> None:
        """Acknowledge and delete entries (one round trip)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.xack(self.stream, keys.SINK_GROUP, *entry_ids)
        pipe.xdel(self.stream, *entry_ids)
        pipe.execute()

    def deliveries(self, entry_id: bytes) -> int:
        """How many times the entry was delivered (0 when it is not pending)."""
        info: Any = self.client.xpending_range(self.stream, keys.SINK_GROUP, min=entry_id, max=entry_id, count=1)
        return int(info[0]["times_delivered"]) if info else 0
