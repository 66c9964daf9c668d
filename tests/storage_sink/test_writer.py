"""The sink writes steps whose screenshot the runner put as a blob (`png_key`, common/blobs.py) into the
same layout as steps that carried the bytes, against a real redis-server and a local directory or moto's
S3 server; a blob that is not in the store sends its entry to the dead-letter stream, never a half step."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import redis

from common import keys
from common.blob_keys import blob_key
from common.events import EpisodeEvent, StepEvent, encode_event, without_token_arrays
from common.objectstore import LocalDirStore, ObjectStore, S3Store
from common.polling import free_port
from common.status import RolloutStatus
from services.storage_sink.consumer import SinkConsumer
from services.storage_sink.settings import SinkSettings
from services.storage_sink.writer import TrajectoryWriter

REF = {"run_id": "run-1", "task_id": "task-a", "rollout_index": 0, "rollout_id": "run-1:task-a:0", "attempt": 1,
       "timestamp": 1_700_000_000.0}  # fixed: two encodings of one episode are byte-equal
PREFIX = "run-1/task-a_0"


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalDirStore(tmp_path / "store")
    return S3Store(f"b-{free_port()}", request.getfixturevalue("s3_endpoint"), "testing", "testing")


def image(n: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + bytes([n]) * 3000


def sink(redis_url: str, store: ObjectStore, **extra: int) -> SinkConsumer:
    consumer = SinkConsumer(redis.Redis.from_url(redis_url), TrajectoryWriter(store),
                            SinkSettings(redis_url=redis_url, consumer="c1", **extra))
    consumer.ensure_group()
    return consumer


def drain(consumer: SinkConsumer) -> int:
    total = 0
    while (n := consumer.process_once()) > 0:
        total += n
    return total


def entries(inline: bool, store: ObjectStore, evidence: dict[str, bytes]) -> list[dict[bytes, bytes]]:
    """An episode of 3 steps (step 2 shows step 0's screen again) and an end event with evaluation files: the
    screenshots and files as the runner with a store sends them (blobs put first, keys in the entries), or
    inline (bytes in the entries)."""
    out = [encode_event(EpisodeEvent(phase="start", task_config={"id": "task-a"}, **REF))]
    for step, n in enumerate([0, 1, 0]):
        tokens = {"prompt_token_ids": list(range(3000)), "logprobs": [-0.5] * 9} if step == 1 else {}
        event = StepEvent(step=step, response=f"s{step}", **tokens, **REF)
        if inline:
            out.append(encode_event(event, image(n)))
        else:
            store.put(blob_key(image(n)), image(n), "image/png")
            if tokens:  # a large record: the whole of it as a blob, the entry without the token arrays
                whole = event.model_dump_json(by_alias=True).encode()
                store.put(blob_key(whole, ".json"), whole)
                out.append(encode_event(without_token_arrays(event), png_key=blob_key(image(n)),
                                        record_key=blob_key(whole, ".json")))
            else:
                out.append(encode_event(event, png_key=blob_key(image(n))))
    if inline:
        files = {"files": {name: base64.b64encode(data).decode() for name, data in evidence.items()}}
    else:
        for data in evidence.values():
            store.put(blob_key(data, ""), data)
        files = {"file_keys": {name: blob_key(data, "") for name, data in evidence.items()}}
    out.append(encode_event(EpisodeEvent(phase="end", status=RolloutStatus.COMPLETED, reward=1.0, num_steps=3,
                                         evaluation={"schema": "cua.evaluation.v1", **files}, **REF)))
    return out


def test_blob_keys_give_the_same_trajectory_as_inline_bytes(redis_url: str, store: ObjectStore,
                                                           tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_url)
    evidence = {"result.txt": b"42\n", "sheet.xlsx": b"PK\x03\x04" + b"x" * 500}
    for entry in entries(False, store, evidence):
        client.xadd(keys.EVENTS_STREAM, entry)  # type: ignore[arg-type]
    assert drain(sink(redis_url, store)) == 5
    inline_store = LocalDirStore(tmp_path / "inline")
    client.flushall()
    for entry in entries(True, inline_store, evidence):
        client.xadd(keys.EVENTS_STREAM, entry)  # type: ignore[arg-type]
    assert drain(sink(redis_url, inline_store)) == 5

    def layout(s: ObjectStore) -> dict[str, bytes]:
        return {key: s.get(key) for key in s.list(f"{PREFIX}/")}

    by_blob, by_bytes = layout(store), layout(inline_store)
    assert by_blob == by_bytes  # every file, byte for byte: the layout does not depend on how PNGs travelled
    assert by_blob[f"{PREFIX}/image_0002.png"] == image(0) and by_blob[f"{PREFIX}/image_0001.png"] == image(1)
    assert by_blob[f"{PREFIX}/evidence/sheet.xlsx"] == evidence["sheet.xlsx"]
    assert json.loads(by_blob[f"{PREFIX}/step_0001.json"])["prompt_token_ids"] == list(range(3000))
    assert "file_keys" not in json.loads(by_blob[f"{PREFIX}/evaluation.json"])
    assert client.xlen(keys.EVENTS_STREAM) == 0


def test_a_step_whose_blob_is_missing_is_dead_lettered_with_its_key(redis_url: str, store: ObjectStore) -> None:
    client = redis.Redis.from_url(redis_url)
    missing = blob_key(b"never put")
    client.xadd(keys.EVENTS_STREAM, encode_event(StepEvent(step=0, **REF), png_key=missing))  # type: ignore[arg-type]
    consumer = sink(redis_url, store, claim_idle_ms=0, max_deliveries=2)
    for _ in range(4):
        consumer.process_once()
    ((_, dead),) = client.xrange(keys.DEAD_LETTER_STREAM)
    assert f"blob {missing} of {PREFIX}/image_0000.png is not in the store".encode() in dead[b"error"]
    assert missing.encode() in dead[b"png_dropped"]  # nothing to copy aside: said so
    assert not store.list(f"{PREFIX}/")  # no step JSON without its screenshot
    assert client.xpending(keys.EVENTS_STREAM, keys.SINK_GROUP)["pending"] == 0


def test_a_dead_letter_keeps_a_copy_of_its_blob(redis_url: str, store: ObjectStore) -> None:
    """An entry dead-lettered for another reason: its screenshot and whole record are copied aside, out of the
    reconciliation's reach, and the dead letter names the copies."""
    client = redis.Redis.from_url(redis_url)
    store.put(blob_key(image(7)), image(7))
    store.put(blob_key(b'{"whole": "record"}', ".json"), b'{"whole": "record"}')
    fields = encode_event(StepEvent(step=0, **REF), png_key=blob_key(image(7)),
                          record_key=blob_key(b'{"whole": "record"}', ".json"))
    fields[b"data"] = fields[b"data"].replace(b'"step":0', b'"step":-1')  # fails validation: a poison entry
    entry_id = client.xadd(keys.EVENTS_STREAM, fields)  # type: ignore[arg-type]
    assert sink(redis_url, store).process_once() == 1
    ((_, dead),) = client.xrange(keys.DEAD_LETTER_STREAM)
    assert dead[b"png_key"] == f"_dead_letters/{entry_id.decode()}.png".encode()
    assert store.get(dead[b"png_key"].decode()) == image(7)
    assert dead[b"record_key"] == f"_dead_letters/{entry_id.decode()}.json".encode()
    assert store.get(dead[b"record_key"].decode()) == b'{"whole": "record"}'
