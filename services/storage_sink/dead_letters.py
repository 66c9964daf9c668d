"""Dead-lettering of stream entries the sink cannot write: undecodable entries, and entries whose write
failed more than `max_deliveries` times while the store was otherwise healthy.

The dead-letter stream (`keys.DEAD_LETTER_STREAM`) is capped at `dead_letter_max` entries (approximate
MAXLEN). A dead letter's PNG (its bytes, or the blob its `png_key` names) and its whole step record (the
blob `record_key` names) are stored aside in the object store (`_dead_letters/{entry_id}.png` / `.json`;
of event shard n > 0 under `_dead_letters/shard-{n}/`); the entry keeps only those keys and its source
stream. When the store fails too, the entry says what was dropped (`png_dropped`, `record_dropped`).
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from prometheus_client import Counter

from common import keys
from common.events import png_key_of, record_key_of
from common.objectstore import ObjectStore

log = logging.getLogger(__name__)

#: Object-store prefix of the PNGs of dead-lettered entries (`{prefix}/{entry_id}.png`).
DEAD_LETTER_PREFIX = "_dead_letters"

DEAD = Counter("cua_sink_dead_lettered_total", "Entries moved to the dead-letter stream")


class DeadLetters:
    """Moves entries of `stream` to the dead-letter stream (the caller acknowledges them after)."""

    def __init__(self, client: redis.Redis, store: ObjectStore, stream: str, max_entries: int) -> None:
        self.client = client
        self.store = store
        self.stream = stream
        self.max_entries = max_entries

    def add(self, entry_id: bytes, fields: dict[bytes, bytes], error: str) -> None:
        """Add the entry to the dead-letter stream with `error`, its large parts stored aside.
        Raises: redis.RedisError (the entry then stays pending)."""
        dead: dict[Any, Any] = {k: v for k, v in fields.items() if k != b"png"}
        dead.update({b"error": error.encode(), b"source_id": entry_id, b"source_stream": self.stream.encode()})
        png, blob = fields.get(b"png"), fields.get(b"png_key")
        if png is not None or blob is not None:
            key = f"{DEAD_LETTER_PREFIX}/{self._shard_folder()}{entry_id.decode()}.png"
            try:  # a blob is copied aside: the reconciliation deletes blobs once no entry in the stream needs them
                if png is not None:
                    self.store.put(key, png, "image/png")
                else:
                    self.store.copy(png_key_of(fields) or "", key)
                dead[b"png_key"] = key.encode()
            except Exception as exc:  # the store failed too (or no such blob): keep Redis bounded, say what was lost
                what = f"{len(png)} bytes" if png is not None else f"blob {blob!r}"
                dead[b"png_dropped"] = f"{what}: {exc!r}".encode()
        if b"record_key" in fields:  # the whole record, aside too (`.json` next to the PNG)
            aside = f"{DEAD_LETTER_PREFIX}/{self._shard_folder()}{entry_id.decode()}.json"
            try:
                self.store.copy(record_key_of(fields) or "", aside)
                dead[b"record_key"] = aside.encode()
            except Exception as exc:
                dead[b"record_dropped"] = f"blob {fields[b'record_key']!r}: {exc!r}".encode()
        self.client.xadd(keys.DEAD_LETTER_STREAM, dead, maxlen=self.max_entries, approximate=True)
        DEAD.inc()
        log.error("dead-lettered %s: %s", entry_id, error)

    def _shard_folder(self) -> str:
        """Entry ids repeat across shards: a shard's own folder under the dead letters (`shard-{n}/`; shard 0
        keeps the folder of one stream: "")."""
        shard = self.stream.removeprefix(keys.EVENTS_STREAM).strip(":")
        return f"shard-{shard}/" if shard else ""
