"""The RQ job function: one rollout (task x rollout index).

Only infrastructure failures are retried (RQ `Retry`, enqueued at the front of the queue, see
`services/task_producer/queueing.py`), and on another env when one is free: the env ids of failed
attempts travel in the job's meta (`common/attempts.py`, which also numbers the attempts).
Deterministic failures return normally (never retried); a bug (`runner_error`) is recorded, then fails
the job with no retry left, so it shows in RQ's failed-job registry with its traceback.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import redis
from rq import get_current_job

from common import attempts
from common.run import RolloutJob
from common.runstate import load_rollout
from common.service import redis_client
from services.runner.publisher import BackpressureTimeout
from services.runner.reaper import JobHeartbeat
from services.runner.rollout import RolloutRunner
from services.runner.settings import RunnerSettings

log = logging.getLogger(__name__)

#: Set by the worker (`use_settings`) before it forks the job's work-horse, which inherits them.
_settings: RunnerSettings | None = None
#: When the worker picked the job of this thread (`note_picked`): a thread's own, so rollouts run at once by the
#: threads of one worker (`services/runner/threaded.py`) each keep theirs; a forked work-horse inherits the value of
#: the worker thread that forked it.
_picked = threading.local()


def note_picked(at: float | None = None) -> None:
    """Note that the worker picked this thread's job at `at` (`time.monotonic()` s; None: now): the start of the
    attempt's start-up."""
    _picked.at = time.monotonic() if at is None else at


def use_settings(settings: RunnerSettings) -> None:
    """Settings for the jobs of this process and its work-horses (default: read from the environment per job)."""
    global _settings
    _settings = settings


def _take_picked() -> float | None:
    picked: float | None = getattr(_picked, "at", None)
    _picked.at = None
    return picked


class InfraFailure(RuntimeError):
    """Raised so RQ retries the rollout (model_error, env_error, env_init_failed)."""


class RunnerBug(RuntimeError):
    """Raised after a `runner_error` was recorded: fails the RQ job loudly, never retried."""


def run_rollout(payload: dict[str, Any]) -> dict[str, Any]:
    """RQ entry point (`services.runner.job.run_rollout`); `payload` is a `RolloutJob` as JSON.

    Returns `{"rollout_id", "status", "reward", "num_steps", "attempt"}`. Raises: InfraFailure for an
    infrastructure failure, so RQ's `Retry` runs it again (the last attempt's status is recorded first);
    RunnerBug for an unexpected exception (recorded as `runner_error` with its traceback; no retry);
    a Redis error as it is (RQ retries it).
    """
    picked_at = _take_picked()
    settings = _settings or RunnerSettings()
    job = RolloutJob.model_validate(payload)
    client = redis_client(settings.redis_url)
    try:
        finished = load_rollout(client, job.run_id, job.rollout_id)
        if finished is not None and finished.status.is_terminal:
            # RQ runs a job again when its process died after the rollout was recorded: never run it twice.
            log.warning("rollout %s already ended (%s, attempt %d): not run again", job.rollout_id,
                        finished.status.value, finished.attempt)
            return _result(finished.rollout_id, finished.status.value, finished.reward, finished.num_steps,
                           finished.attempt)
        with JobHeartbeat(client, job.job_id, settings.heartbeat_ttl_s):
            return _attempt(client, settings, job, picked_at)
    finally:
        client.close()


def _result(rollout_id: str, status: str, reward: float | None, num_steps: int, attempt: int) -> dict[str, Any]:
    return {"rollout_id": rollout_id, "status": status, "reward": reward, "num_steps": num_steps, "attempt": attempt}


def _attempt(client: redis.Redis, settings: RunnerSettings, job: RolloutJob,
             picked_at: float | None) -> dict[str, Any]:
    """One attempt of `job` (see `run_rollout`)."""
    attempt = attempts.start(client, job.rollout_id)
    rq_job = get_current_job()
    final_attempt = rq_job is None or not rq_job.retries_left
    failed_envs = attempts.failed_envs(rq_job)
    runner = RolloutRunner(client, settings)
    try:
        outcome = runner.run(job, attempt, final_attempt, avoid_envs=failed_envs, picked_at=picked_at)
    except (redis.RedisError, BackpressureTimeout):
        raise  # Redis itself failed: infrastructure, RQ retries the job (the on_failure callback records it)
    except Exception as exc:  # a bug outside the episode: shown as one, never retried
        log.exception("rollout %s: runner bug", job.rollout_id)
        runner.record_bug(job, attempt, exc)
        if rq_job is not None:
            rq_job.retries_left = 0
        raise RunnerBug(f"{job.rollout_id} attempt {attempt}: {exc!r}") from exc
    log.info("rollout %s attempt %d: %s reward=%s", job.rollout_id, attempt, outcome.status.value,
             outcome.reward)
    if outcome.status.is_infra_failure:
        if rq_job is not None and outcome.env_id:
            attempts.note_failed_env(rq_job, outcome.env_id)
        raise InfraFailure(f"{job.rollout_id} attempt {attempt}: {outcome.status.value}: {outcome.error}")
    if outcome.status.is_bug:
        if rq_job is not None:
            rq_job.retries_left = 0  # a bug repeats: never retried
        raise RunnerBug(f"{job.rollout_id} attempt {attempt}: {outcome.error}")
    return _result(job.rollout_id, outcome.status.value, outcome.reward, outcome.num_steps, attempt)
