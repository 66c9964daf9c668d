"""Issue 34 attack 3, the sink's side: an episode start naming a newer attempt of someone else's rollout (what a
gateway session publishes when it opens) made the sink delete that trajectory's steps and final files. Now the
sink believes a newer attempt only when the runners counted it (`common.attempts`, in Redis): the forged start,
and the steps and end that follow it, are dead-lettered with an error naming why, and the trajectory is intact.
A runner's real retry still replaces the older attempt. Real redis-server, the sink's consumer, a local store."""

from __future__ import annotations

import json
from pathlib import Path

import redis

from common import attempts, keys
from common.events import EpisodeEvent, StepEvent, encode_event
from common.objectstore import LocalDirStore
from common.status import RolloutStatus
from tests.storage_sink.test_consumer import REF, consumer, drain, png, publish_episode

PREFIX = f"{REF['run_id']}/{REF['task_id']}_{REF['rollout_index']}"


def test_a_forged_newer_attempt_deletes_nothing(redis_url: str, tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_url)
    store = LocalDirStore(tmp_path)
    sink = consumer(redis_url, store)
    attempts.start(client, REF["rollout_id"])  # the runner's first attempt
    publish_episode(client, attempt=1, steps=3)
    drain(sink)
    before = {key: store.get(key) for key in store.list(f"{PREFIX}/")}
    assert f"{PREFIX}/manifest.json" in before and f"{PREFIX}/step_0002.json" in before

    forged = {**REF, "attempt": 9}
    for event in (EpisodeEvent(phase="start", model="policy", agent="external", **forged),
                  StepEvent(step=0, response="forged", **forged),
                  EpisodeEvent(phase="end", status=RolloutStatus.COMPLETED, num_steps=1, **forged)):
        client.xadd(keys.EVENTS_STREAM, encode_event(event, png(200) if isinstance(event, StepEvent) else None))
    drain(sink)
    assert {key: store.get(key) for key in store.list(f"{PREFIX}/")} == before  # not a byte changed
    dead = client.xrange(keys.DEAD_LETTER_STREAM)
    errors = [fields[b"error"].decode() for _, fields in dead]
    assert len(errors) == 3 and "start of attempt 9" in errors[0] and "runners counted 1" in errors[0]
    assert all("refused" in error for error in errors)
    assert client.xpending(keys.EVENTS_STREAM, keys.SINK_GROUP)["pending"] == 0  # nothing left stuck

    attempts.start(client, REF["rollout_id"])  # a real retry: the runners counted attempt 2
    publish_episode(client, attempt=2, steps=1)
    drain(sink)
    assert store.list(f"{PREFIX}/step_") == [f"{PREFIX}/step_0000.json"]
    assert json.loads(store.get(f"{PREFIX}/manifest.json"))["attempt"] == 2
