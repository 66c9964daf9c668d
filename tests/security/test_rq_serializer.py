"""Issue 34 attack 2, second half: with write access to Redis, enqueue code for the runners (or the producer) to
run. Jobs are JSON (`common.rqjobs`): a pickle planted in a job, its meta or its result is never unpickled, and a
JSON job naming any function but the rollout job (or any callback but its own) fails as `ForbiddenJob` in RQ's
failed-job registry, its code never run. Real redis-server, real RQ workers as the runner makes them (inline and
threaded), the producer's own fetch."""

from __future__ import annotations

import os
import pickle
import zlib
from pathlib import Path
from typing import Any

import pytest
import redis
from rq import Queue
from rq.registry import FailedJobRegistry

from common import rqjobs
from common.run import ROLLOUT_JOB_FUNC
from services.runner.settings import RunnerSettings
from services.runner.worker import make_worker

QUEUE = "cua-attack"


class Payload:
    """A pickle that runs `touch <marker>` when unpickled (the classic `__reduce__` exploit)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


@pytest.fixture()
def client(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(redis_url)


def _work(client: redis.Redis, concurrency: int, execution: str = "inline") -> None:
    """Drain QUEUE with the runner's own worker class (forking, inline one at a time, or threaded)."""
    settings = RunnerSettings(execution=execution, concurrency=concurrency)  # type: ignore[call-arg]
    make_worker(settings, [rqjobs.queue(QUEUE, client)], client).work(burst=True, with_scheduler=False)


def _exc(client: redis.Redis, job_id: str) -> str:
    result = rqjobs.fetch(job_id, client).latest_result()
    return (result.exc_string or "") if result is not None else ""


@pytest.mark.parametrize(("execution", "concurrency"), [("fork", 1), ("inline", 1), ("inline", 2)])
def test_a_json_job_naming_another_function_fails_without_running(client: redis.Redis, tmp_path: Path,
                                                                  execution: str, concurrency: int) -> None:
    marker = tmp_path / "owned"
    attacker = Queue(QUEUE, connection=client, serializer=rqjobs.SERIALIZER)  # anyone with Redis write access
    job = attacker.enqueue("os.system", f"touch {marker}")
    _work(client, concurrency, execution)
    assert not marker.exists()
    assert job.id in FailedJobRegistry(QUEUE, connection=client, **rqjobs.REGISTRY_OPTIONS).get_job_ids()
    assert "ForbiddenJob" in _exc(client, job.id) and "'os.system'" in _exc(client, job.id)
    assert ROLLOUT_JOB_FUNC in _exc(client, job.id)  # the message names what is allowed


def test_a_pickled_job_is_never_unpickled_by_a_runner(client: redis.Redis, tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    job = Queue(QUEUE, connection=client).enqueue(ROLLOUT_JOB_FUNC, {})  # RQ's default: pickle
    client.hset(job.key, "data", zlib.compress(pickle.dumps(Payload(marker))))
    _work(client, 1)
    assert not marker.exists()
    assert "DeserializationError" in _exc(client, job.id)


def test_the_producer_reads_a_job_with_a_pickled_meta_without_running_it(client: redis.Redis,
                                                                         tmp_path: Path) -> None:
    """The producer fetches jobs (cancelling a run, `queueing.cancel_run`): RQ loads their meta and result
    eagerly, with pickle by default."""
    marker = tmp_path / "owned"
    job = rqjobs.queue(QUEUE, client).enqueue(ROLLOUT_JOB_FUNC, {})
    client.hset(job.key, mapping={"meta": pickle.dumps(Payload(marker)), "result": pickle.dumps(Payload(marker))})
    fetched = rqjobs.fetch(job.id, client)
    assert not marker.exists()
    assert "unserialized" in fetched.meta  # RQ keeps what it could not load as bytes


def test_callbacks_other_than_the_runners_are_refused() -> None:
    job = rqjobs.RolloutQueueJob(connection=redis.Redis())
    job._failure_callback_name = "os.system"
    with pytest.raises(rqjobs.ForbiddenJob, match="failure callback 'os.system'"):
        _ = job.failure_callback
    job._success_callback_name = "subprocess.run"
    with pytest.raises(rqjobs.ForbiddenJob, match="success callback 'subprocess.run'"):
        _ = job.success_callback
