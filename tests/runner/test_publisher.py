"""services/runner/publisher.py: `retry_redis` (which errors are retried, for how long, and what is raised at
the end; plain functions that fail on purpose), and the publisher's step files: a step's screenshot goes to
the object store under its content address (a local directory, or moto's S3 server with the write-only
client) and the stream entry, on a real redis-server, carries only the key and the step record."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from pathlib import Path

import pytest
import redis

from common import keys
from common.blob_keys import blob_key
from common.blobs import WriteOnlyS3
from common.events import ParsedAction, StepEvent, Usage, decode_event, png_key_of, record_key_of
from common.objectstore import LocalDirStore, S3Store
from common.polling import free_port
from services.runner.publisher import (
    RECORD_INLINE_MAX_BYTES,
    BackpressureTimeout,
    BlobPutError,
    EventPublisher,
    retry_redis,
)

#: The measured ceiling of a step's stream entry (issue 27): keys and the step record, no image bytes.
STEP_ENTRY_MAX_BYTES = 4096


def test_redis_errors_and_backpressure_are_retried_until_the_call_succeeds(caplog: pytest.LogCaptureFixture) -> None:
    failures: list[Exception] = [redis.ConnectionError("down"), BackpressureTimeout("full")]

    def call() -> str:
        if failures:
            raise failures.pop(0)
        return "recorded"

    with caplog.at_level(logging.WARNING):
        assert retry_redis(call, within_s=10, what="final record", interval_s=0.01) == "recorded"
    assert [r.getMessage() for r in caplog.records] == [
        "final record failed (ConnectionError('down')); retrying",
        "final record failed (BackpressureTimeout('full')); retrying",
    ]


def test_the_last_error_is_raised_once_the_time_is_up() -> None:
    attempts: list[int] = []

    def call() -> None:
        attempts.append(len(attempts))
        raise redis.TimeoutError(f"attempt {len(attempts)}")

    with pytest.raises(redis.TimeoutError) as raised:
        retry_redis(call, within_s=0.2, what="end event", interval_s=0.01)
    assert len(attempts) >= 3 and str(raised.value) == f"attempt {len(attempts)}"
    attempts.clear()
    with pytest.raises(redis.TimeoutError, match="attempt 1"):
        retry_redis(call, within_s=0, what="end event")  # no time: one call
    assert len(attempts) == 1


def test_other_errors_are_bugs_and_raised_at_once() -> None:
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        raise KeyError("rollout_id")

    with pytest.raises(KeyError):
        retry_redis(call, within_s=10, what="final record")
    assert calls == [1]


def screenshot(seed: int, size: int = 200_000) -> bytes:
    """Stand-in PNG bytes of a full-HD screenshot's size (the publisher never decodes them)."""
    return b"\x89PNG\r\n\x1a\n" + os.urandom(size - 8 - 4) + seed.to_bytes(4, "big")


def step_event(step: int) -> StepEvent:
    """A step as the UI-TARS agent publishes it: thought, one click with its code, usage and timings."""
    return StepEvent(run_id="run-1", task_id="task-a", rollout_index=0, rollout_id="run-1:task-a:0", step=step,
                     response="Thought: I click the Save button.\nAction: click(start_box='(812,441)')",
                     thought="I click the Save button.",
                     actions=[ParsedAction(action_type="click", inputs={"start_box": [812, 441]},
                                           code="import pyautogui\npyautogui.click(812, 441)")],
                     usage=Usage(prompt_tokens=4200, completion_tokens=38), model_version="v1", replica="r0")


@pytest.fixture(params=["local", "s3"])
def blob_store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[object, object]:
    """(the runner's writer, a reader with full rights on the same store)."""
    if request.param == "local":
        store = LocalDirStore(tmp_path / "store")
        return store, store
    endpoint = request.getfixturevalue("s3_endpoint")
    reader = S3Store(f"b-{free_port()}", endpoint, "testing", "testing")  # creates the bucket, as the sink does
    return WriteOnlyS3(reader.bucket, endpoint, "testing", "testing"), reader


def test_a_step_goes_out_as_its_blob_key_and_record_only(redis_url: str, blob_store: tuple) -> None:
    writer, reader = blob_store
    client = redis.Redis.from_url(redis_url)
    publisher = EventPublisher(client, 64 * 1024 * 1024, 5.0, blobs=writer)
    images = [screenshot(0), screenshot(1)]
    for step, image in enumerate([images[0], images[1], images[0]]):  # step 2 shows step 0's screen again
        publisher.publish(step_event(step), image)
    entries = client.xrange(keys.EVENTS_STREAM)
    assert len(entries) == 3
    for (_, fields), image in zip(entries, [images[0], images[1], images[0]], strict=True):
        assert b"png" not in fields and not any(image[:64] in value for value in fields.values())
        key = png_key_of(fields)
        assert key == f"_blobs/{hashlib.sha256(image).hexdigest()}.png" == blob_key(image)
        assert reader.get(key) == image
        assert sum(len(k) + len(v) for k, v in fields.items()) <= STEP_ENTRY_MAX_BYTES
        event, png = decode_event(fields)
        assert isinstance(event, StepEvent) and png is None
    assert sorted(reader.list("_blobs/")) == sorted({blob_key(i) for i in images})  # the re-put: same object


def test_a_record_with_token_arrays_goes_whole_to_the_store(redis_url: str, blob_store: tuple) -> None:
    """vLLM's prompt token ids with 5 screenshots in the prompt: thousands of ids. The entry keeps the record
    without them (texts, actions, timings) and names the blob of the whole record."""
    writer, reader = blob_store
    client = redis.Redis.from_url(redis_url)
    event = step_event(0).model_copy(update={"prompt_token_ids": list(range(151_000, 151_000 + 6000)),
                                             "token_ids": list(range(40)), "logprobs": [-0.25] * 40})
    whole = event.model_dump_json(by_alias=True).encode()
    assert len(whole) > 10 * RECORD_INLINE_MAX_BYTES
    EventPublisher(client, 64 * 1024 * 1024, 5.0, blobs=writer).publish(event, screenshot(4))
    ((_, fields),) = client.xrange(keys.EVENTS_STREAM)
    assert sum(len(k) + len(v) for k, v in fields.items()) <= STEP_ENTRY_MAX_BYTES
    assert reader.get(record_key_of(fields)) == whole and record_key_of(fields).endswith(".json")
    sent, _ = decode_event(fields)
    assert isinstance(sent, StepEvent) and sent.prompt_token_ids is None and sent.token_ids is None
    assert (sent.response, sent.actions, sent.usage) == (event.response, event.actions, event.usage)
    small = step_event(1)
    EventPublisher(client, 64 * 1024 * 1024, 5.0, blobs=writer).publish(small, screenshot(5))
    (_, last) = client.xrange(keys.EVENTS_STREAM)[-1]
    assert record_key_of(last) is None and last[b"data"] == small.model_dump_json(by_alias=True).encode()


def test_without_a_store_the_png_rides_in_the_entry(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    image = screenshot(2, 5000)
    EventPublisher(client, 64 * 1024 * 1024, 5.0).publish(step_event(0), image)
    ((_, fields),) = client.xrange(keys.EVENTS_STREAM)
    assert fields[b"png"] == image and png_key_of(fields) is None


def test_a_store_that_does_not_answer_fails_the_put_and_publishes_nothing(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    dead = WriteOnlyS3("trajectories", f"127.0.0.1:{free_port()}", "k", "s", connect_timeout_s=0.2, retries=0)
    publisher = EventPublisher(client, 64 * 1024 * 1024, 5.0, blobs=dead, blob_retry_s=0.5)
    started = time.monotonic()
    with pytest.raises(BlobPutError, match=r"put of _blobs/[0-9a-f]{64}\.png \(5000 bytes\) to s3://trajectories"):
        publisher.publish(step_event(0), screenshot(3, 5000))
    assert time.monotonic() - started < 5.0  # retried within blob_retry_s, not for ever
    assert client.xlen(keys.EVENTS_STREAM) == 0  # no event names a blob that is not there
