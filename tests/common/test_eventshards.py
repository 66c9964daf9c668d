"""Shard assignment of the event stream (issue 27, point 4): stable per run, one shard = the old stream."""

from __future__ import annotations

import zlib

import pytest
from pydantic import ValidationError

from common import keys
from common.eventshards import parse_shards, shard_of, stream_of
from services.storage_sink.settings import SinkSettings


def test_one_shard_is_the_single_stream_of_before() -> None:
    assert keys.events_stream(0) == keys.EVENTS_STREAM == "cua:events"
    assert {stream_of(f"run-{i}", 1) for i in range(50)} == {"cua:events"}
    assert keys.events_stream(3) == "cua:events:3"


def test_a_run_has_one_shard_everywhere_and_runs_spread_over_them() -> None:
    assert shard_of("run-7", 8) == zlib.crc32(b"run-7") % 8  # not Python's per-process salted hash()
    counts = [0] * 8
    for i in range(800):
        counts[shard_of(f"run-{i}", 8)] += 1
    assert min(counts) > 60  # ~100 each
    with pytest.raises(ValueError, match="EVENT_SHARDS must be at least 1"):
        shard_of("run-1", 0)


def test_sink_shard_lists_are_checked_against_the_shard_count() -> None:
    assert parse_shards("", 4) == [0, 1, 2, 3]
    assert parse_shards("3, 0-1,1", 4) == [0, 1, 3]
    with pytest.raises(ValueError, match="'4' is outside shards 0-3"):
        parse_shards("0,4", 4)
    with pytest.raises(ValueError, match="'a-b' is not a shard number"):
        parse_shards("a-b", 4)
    with pytest.raises(ValidationError, match="SINK_SHARDS: '2' is outside shards 0-1 \\(EVENT_SHARDS=2\\)"):
        SinkSettings(event_shards=2, shards="2")
