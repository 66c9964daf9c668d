"""`stream_group`: entries in stream order once each; a group on a real redis-server reads, claims, acks."""

from __future__ import annotations

import redis

from services.storage_sink.settings import SinkSettings
from services.storage_sink.stream_group import StreamGroup, in_stream_order


def test_in_stream_order_sorts_by_id_numerically_and_drops_repeats() -> None:
    first = [(b"10-0", {b"a": b"1"}), (b"9-1", {b"b": b"2"})]
    second = [(b"9-1", {b"b": b"2"}), (b"9-0", {b"c": b"3"})]
    assert [entry_id for entry_id, _ in in_stream_order(first, second)] == [b"9-0", b"9-1", b"10-0"]


def test_a_group_reads_new_entries_then_its_own_pending_then_acks_them(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    stream = "test:stream-group"
    client.delete(stream)
    group = StreamGroup(client, stream, SinkSettings(consumer="sink-a"))
    group.ensure()
    group.ensure()  # idempotent (BUSYGROUP ignored)
    ids = [client.xadd(stream, {"n": str(i)}) for i in range(3)]
    assert [entry_id for entry_id, _ in group.read(None)] == ids
    assert group.read(None) == []  # nothing new
    assert [entry_id for entry_id, _ in group.read(None, "0")] == ids  # still pending on this consumer
    assert group.deliveries(ids[0]) == 2
    group.done(*ids)
    assert group.read(None, "0") == [] and client.xlen(stream) == 0
