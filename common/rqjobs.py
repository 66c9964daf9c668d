"""RQ as every service uses it: JSON-serialized jobs that can only name the rollout job function.

RQ's default serializer is pickle: anything that can write to Redis could store a job (or its `meta`, or its
result) whose unpickling runs code in whichever process reads it: runners, the producer, the reaper. And RQ runs
whatever function a job names (`import_attribute(job.func_name)`), with any JSON arguments, so a JSON serializer
alone still lets a Redis writer run `os.system`. Here:

- `SERIALIZER` is RQ's `JSONSerializer` (`rq.serializers`): loading a job reads JSON, never code;
- `RolloutQueueJob` (the `job_class` of every queue, worker and fetch) refuses to run any function but
  `common.run.ROLLOUT_JOB_FUNC` and any callback but `ALLOWED_CALLBACKS`, and refuses an instance (a
  method call): such a job fails with `ForbiddenJob` naming the function, which RQ records in its failed-job
  registry (a tampered job shows as what it is), and no code of the job's choosing runs.

Every service builds RQ objects through `queue`, `fetch`, `fetch_many` and `WORKER_OPTIONS`, so the serializer and
job class cannot differ between the writer and the readers of a job (a pickled job would fail to load, as a
`DeserializationError`, never run). RQ is pinned to major 2 (`Job.func` and the callback properties are RQ 2's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import redis
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from common.run import ON_FAILURE_CALLBACK, ROLLOUT_JOB_FUNC

log = logging.getLogger(__name__)

#: The serializer of every job, result and meta (`rq.serializers.JSONSerializer`).
SERIALIZER = JSONSerializer
#: The only job function a worker runs.
ALLOWED_FUNCS = frozenset({ROLLOUT_JOB_FUNC})
#: The only callbacks (on success, failure or stop) a worker runs.
ALLOWED_CALLBACKS = frozenset({ON_FAILURE_CALLBACK})


class ForbiddenJob(RuntimeError):
    """A job names a function (or callback, or instance) that no rollout job names: someone wrote it to Redis
    by hand. Raised instead of running it."""


class RolloutQueueJob(Job):
    """RQ's `Job`, JSON-serialized, that resolves only `ALLOWED_FUNCS` and `ALLOWED_CALLBACKS`.

    Raises (from `func` and the callback properties, i.e. when a worker is about to run them): ForbiddenJob
    naming the job, what it names and what is allowed."""

    def __init__(self, id: str | None = None, connection: redis.Redis | None = None,  # noqa: A002 (RQ's name)
                 serializer: Any = None) -> None:
        super().__init__(id, connection=connection, serializer=SERIALIZER)  # whatever the caller asked

    @property
    def func(self) -> Callable[..., Any] | None:
        """The job's function: `ROLLOUT_JOB_FUNC` only. Raises: ForbiddenJob for anything else."""
        name = self.func_name
        if self.instance is not None:
            raise ForbiddenJob(f"job {self.id} calls a method of a stored instance ({name!r}): refused")
        if name not in ALLOWED_FUNCS:
            raise ForbiddenJob(f"job {self.id} names function {name!r}, not one a runner runs "
                               f"({', '.join(sorted(ALLOWED_FUNCS))}): refused")
        return super().func  # type: ignore[no-any-return]

    def _checked_callback(self, kind: str, name: str | None) -> None:
        if name and name not in ALLOWED_CALLBACKS:
            raise ForbiddenJob(f"job {self.id} names {kind} callback {name!r}, not one a runner runs "
                               f"({', '.join(sorted(ALLOWED_CALLBACKS))}): refused")

    @property
    def success_callback(self) -> Any:
        """RQ's success callback, when allowed. Raises: ForbiddenJob."""
        self._checked_callback("success", getattr(self, "_success_callback_name", None))
        return super().success_callback

    @property
    def failure_callback(self) -> Any:
        """RQ's failure callback, when allowed. Raises: ForbiddenJob."""
        self._checked_callback("failure", getattr(self, "_failure_callback_name", None))
        return super().failure_callback

    @property
    def stopped_callback(self) -> Any:
        """RQ's stopped callback, when allowed. Raises: ForbiddenJob."""
        self._checked_callback("stopped", getattr(self, "_stopped_callback_name", None))
        return super().stopped_callback


#: Keyword arguments of every RQ worker (`Worker(queues, **WORKER_OPTIONS, ...)`).
WORKER_OPTIONS: dict[str, Any] = {"job_class": RolloutQueueJob, "serializer": SERIALIZER}


def queue(name: str, connection: redis.Redis) -> Queue:
    """The RQ queue `name` with the JSON serializer and `RolloutQueueJob`."""
    return Queue(name, connection=connection, job_class=RolloutQueueJob, serializer=SERIALIZER)


def fetch(job_id: str, connection: redis.Redis) -> RolloutQueueJob:
    """`Job.fetch` with the JSON serializer. Raises: rq.exceptions.NoSuchJobError."""
    job = RolloutQueueJob.fetch(job_id, connection=connection, serializer=SERIALIZER)
    assert isinstance(job, RolloutQueueJob)
    return job


def fetch_many(job_ids: Iterable[str], connection: redis.Redis) -> list[Job | None]:
    """`Job.fetch_many` with the JSON serializer (None for a job that does not exist)."""
    return RolloutQueueJob.fetch_many(list(job_ids), connection=connection, serializer=SERIALIZER)
#: Keyword arguments of every RQ job registry built by name (`StartedJobRegistry(name, connection, ...)`).
REGISTRY_OPTIONS: dict[str, Any] = {"job_class": RolloutQueueJob, "serializer": SERIALIZER}
