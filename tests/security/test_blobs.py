"""Attack 4 of issue 34: a holder of the runners' put-only key overwrites `_blobs/{sha256}` with other bytes.

Real redis-server, moto's S3 server (and a local directory store), the real sink consumer, the runner's own blob
writer (`WriteOnlyS3`, the put-only credential). A screenshot blob and a step-record blob are replaced after the
runner put them; the sink must not copy them into the trajectory, must say why (the dead letter names the blob
and its real hash), and must lose nothing else: the step record is kept in the dead letter, the untouched steps
and the episode's end are written.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest
import redis
from PIL import Image

from common import keys
from common.blob_keys import blob_key
from common.blobs import BlobWriter, WriteOnlyS3
from common.events import EpisodeEvent, StepEvent, encode_event, without_token_arrays
from common.objectstore import LocalDirStore, ObjectStore, S3Store
from common.polling import free_port
from common.status import RolloutStatus
from services.storage_sink.consumer import SinkConsumer
from services.storage_sink.settings import SinkSettings
from services.storage_sink.writer import TrajectoryWriter

REF = {"run_id": "run-b", "task_id": "task-b", "rollout_index": 0, "rollout_id": "run-b:task-b:0", "attempt": 1}
PREFIX = "run-b/task-b_0"


def _png(red: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 18), (red, 0, 0)).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture(params=["s3", "local"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[ObjectStore, BlobWriter]:
    """(the sink's store, the runners' writer into the same place)."""
    if request.param == "local":
        return LocalDirStore(tmp_path / "store"), LocalDirStore(tmp_path / "store")
    endpoint, bucket = request.getfixturevalue("s3_endpoint"), f"blobs-{free_port()}"
    return S3Store(bucket, endpoint, "testing", "testing"), WriteOnlyS3(bucket, endpoint, "testing", "testing")


def test_a_blob_overwritten_with_other_bytes_never_enters_the_trajectory(
        redis_url: str, stores: tuple[ObjectStore, BlobWriter]) -> None:
    store, runner = stores
    client = redis.Redis.from_url(redis_url)
    honest, forged = [_png(10), _png(20), _png(30)], _png(250)
    record = StepEvent(step=1, response="s1", token_ids=list(range(50)), logprobs=[-0.1] * 50, **REF)
    whole = record.model_dump_json(by_alias=True).encode()
    for image in honest:
        runner.put(blob_key(image), image, "image/png")
    runner.put(blob_key(whole, ".json"), whole, "application/json")
    # The attack: the same put-only key rewrites two blobs the runner already named.
    runner.put(blob_key(honest[0]), forged, "image/png")
    runner.put(blob_key(whole, ".json"), whole.replace(b'"s1"', b'"forged"'), "application/json")
    entries = [encode_event(EpisodeEvent(phase="start", task_config={"id": "task-b"}, **REF)),
               encode_event(StepEvent(step=0, response="s0", **REF), png_key=blob_key(honest[0])),
               encode_event(without_token_arrays(record), png_key=blob_key(honest[1]),
                            record_key=blob_key(whole, ".json")),
               encode_event(StepEvent(step=2, response="s2", **REF), png_key=blob_key(honest[2])),
               encode_event(EpisodeEvent(phase="end", status=RolloutStatus.COMPLETED, reward=1.0, num_steps=3,
                                         **REF))]
    for entry in entries:
        client.xadd(keys.EVENTS_STREAM, entry)  # type: ignore[arg-type]
    sink = SinkConsumer(client, TrajectoryWriter(store), SinkSettings(redis_url=redis_url, consumer="s1"))
    sink.ensure_group()
    while sink.process_once(block_ms=100) > 0:
        pass

    written = set(store.list(PREFIX))
    assert f"{PREFIX}/image_0000.png" not in written and f"{PREFIX}/step_0000.json" not in written
    assert f"{PREFIX}/step_0001.json" not in written  # its record blob was forged
    assert store.get(f"{PREFIX}/image_0002.png") == honest[2] and f"{PREFIX}/step_0002.json" in written
    assert f"{PREFIX}/manifest.json" in written
    assert not any(store.get(key) == forged for key in written)
    dead = {fields[b"source_id"]: fields for _, fields in client.xrange(keys.DEAD_LETTER_STREAM)}
    assert len(dead) == 2 and client.xpending(keys.EVENTS_STREAM, "sink")["pending"] == 0
    errors = sorted(fields[b"error"].decode() for fields in dead.values())
    forged_hash = hashlib.sha256(forged).hexdigest()
    assert any(blob_key(honest[0]) in e and forged_hash in e and "does not match its name" in e for e in errors)
    assert any(blob_key(whole, ".json") in e and "does not match its name" in e for e in errors)
    assert all(b'"step"' in fields[b"data"] for fields in dead.values())  # the step records are kept
