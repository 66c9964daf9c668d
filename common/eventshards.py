"""The event stream sharded by run: `EVENT_SHARDS` streams (`keys.events_stream`), one consumer group
`sink` on each, every event of a run on one shard (so a rollout's events keep their order), and each
sink consuming the shards it is assigned (`SINK_SHARDS`).

A run's shard is CRC-32 (zlib, ISO 3309) of its id, modulo the shard count: stable across processes and
hosts (Python's `hash()` of a str is salted per process). The count must be the same for every runner
and sink; change it only with the streams drained (a run's later events would go to another shard).
"""

from __future__ import annotations

import zlib

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from common import keys


class EventShardSettings(BaseSettings):
    """`EVENT_SHARDS` (unprefixed, shared by runners and sinks): how many streams carry the events.
    1 (the default) is the single stream `cua:events`."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore", populate_by_name=True)

    event_shards: int = Field(default=1, ge=1, le=1024, validation_alias=AliasChoices("EVENT_SHARDS", "event_shards"))


def shard_of(run_id: str, shards: int) -> int:
    """The shard (0 .. shards - 1) of every event of run `run_id`. Raises: ValueError when shards < 1."""
    if shards < 1:
        raise ValueError(f"EVENT_SHARDS must be at least 1, got {shards}")
    return zlib.crc32(run_id.encode()) % shards


def stream_of(run_id: str, shards: int) -> str:
    """The stream carrying the events of run `run_id`."""
    return keys.events_stream(shard_of(run_id, shards))


def parse_shards(spec: str, shards: int) -> list[int]:
    """The shards a sink consumes from `SINK_SHARDS`: "" = all of them, else comma-separated numbers
    and ranges (`"0,2-3"`), each below `shards`. Sorted, each once.
    Raises: ValueError naming the bad item."""
    if not spec.strip():
        return list(range(shards))
    chosen: set[int] = set()
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        low, _, high = item.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ValueError(f"SINK_SHARDS: {item!r} is not a shard number or a range like 2-5") from None
        if not 0 <= first <= last < shards:
            raise ValueError(f"SINK_SHARDS: {item!r} is outside shards 0-{shards - 1} (EVENT_SHARDS={shards})")
        chosen.update(range(first, last + 1))
    if not chosen:
        raise ValueError(f"SINK_SHARDS: {spec!r} names no shard")
    return sorted(chosen)
