"""Recording an attempt whose process died (SIGKILL, OOM, a node lost): RQ then retries or fails the job,
and the rollout's record must say so instead of staying `running` forever.

Three paths reach `record_lost_attempt`: the worker parent's `work_horse_killed_handler` (its work-horse
died, the parent lives), RQ's `on_failure` callback `on_job_failure` (set on every rollout job; it also
runs when the job function raised, and when RQ's registry cleanup or our reaper gives up an abandoned
job), and nothing else. Each is idempotent: an attempt whose record is already terminal, or already
`queued` for a retry, is left alone.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import redis
from rq.job import Job

from common import attempts
from common.run import RolloutJob
from common.runstate import RolloutRecord, load_rollout, record_rollout
from common.settings import ServiceSettings
from common.status import RolloutStatus

log = logging.getLogger(__name__)

def record_lost_attempt(client: redis.Redis, job: Job, reason: str) -> RolloutStatus | None:
    """Record the rollout of `job` as `queued` (RQ will retry it: retries left) or `env_error` (no retry
    left: a dead runner is an infrastructure failure), unless its record already ended that attempt.

    Returns the status written, or None when nothing was written (not a rollout job, or already recorded).
    """
    payload = (job.kwargs or {}).get("payload")
    if not isinstance(payload, dict):
        return None
    rollout = RolloutJob.model_validate(payload)
    record = load_rollout(client, rollout.run_id, rollout.rollout_id)
    attempt = attempts.current(client, rollout.rollout_id)
    retry = bool(job.retries_left)
    if record is not None and record.attempt >= attempt:
        if record.status.is_terminal or (record.status is RolloutStatus.QUEUED and retry):
            return None
    status = RolloutStatus.QUEUED if retry else RolloutStatus.ENV_ERROR
    error = f"attempt {attempt}: {reason}" + ("; retrying" if retry else "; no retry left")
    base: dict[str, Any] = record.model_dump() if record is not None else {
        "rollout_id": rollout.rollout_id, "run_id": rollout.run_id, "task_id": rollout.task.id,
        "rollout_index": rollout.rollout_index, "domain": rollout.task.effective_domain}
    base.update(status=status, attempt=max(attempt, 1), error=error, reward=None,
                ended_at=None if retry else time.time())

    record_rollout(client, RolloutRecord.model_validate(base), ttl_s=ServiceSettings().run_ttl_s)
    log.warning("rollout %s: %s -> %s", rollout.rollout_id, error, status.value)
    return status


def on_job_failure(job: Job, connection: redis.Redis, exc_type: type[BaseException] | None = None,
                   exc_value: BaseException | None = None, *_: Any) -> None:
    """RQ `on_failure` callback: the job raised, or was abandoned (its worker died). Records the lost
    attempt when the job function could not (see `record_lost_attempt`)."""
    reason = f"runner lost the attempt ({exc_type.__name__ if exc_type else 'unknown'}: {exc_value!r})"
    record_lost_attempt(connection, job, reason)


def on_work_horse_killed(job: Job, retpid: int, ret_val: int, rusage: Any) -> None:
    """`Worker(work_horse_killed_handler=...)`: the work-horse died under a live worker parent; runs
    in the parent before RQ retries or fails the job."""
    record_lost_attempt(job.connection, job, f"runner work-horse died (wait status {ret_val})")
