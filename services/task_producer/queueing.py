"""Turning a run into RQ jobs (one per rollout), cancelling runs, and reading queue statistics."""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import redis
from rq import Callback, Queue, Retry, Worker
from rq.exceptions import NoSuchJobError
from rq.job import Job

from common import attempts, keys, rqjobs
from common import redis_typed as rt
from common.osworld_features import unsupported_by_catalogue
from common.run import ON_FAILURE_CALLBACK, ROLLOUT_JOB_FUNC, RolloutJob, RunRequest, make_rollout_id, rq_job_id
from common.runstate import RolloutRecord, RunMeta, load_run_meta, record_rollout, save_run_meta
from common.status import RolloutStatus
from common.task import OSWorldTask
from services.task_producer.batching import enqueue_unique_batch
from services.task_producer.settings import ProducerSettings


@dataclass(frozen=True)
class EnqueueResult:
    """Outcome of `enqueue_run`: the run id, how many rollouts were enqueued now, how many existed,
    and how many were recorded `unsupported` instead of being enqueued (`on_unsupported: "skip"`)."""

    run_id: str
    enqueued: int
    already_present: int
    created: bool
    skipped: int = 0


def unsupported_tasks(tasks: list[OSWorldTask]) -> dict[str, list[str]]:
    """Task id -> the features of that task the runner does not implement (only tasks with some),
    labelled as `services.runner.osworld.unsupported_features` does (`"setup type 'googledrive'"`), checked
    against the catalogue of implemented names (`common.osworld_features`: the producer never imports the
    OSWorld evaluation layer)."""
    return {task.id: features for task in tasks if (features := unsupported_by_catalogue(task))}


def unsupported_message(tasks: list[OSWorldTask], unsupported: dict[str, list[str]]) -> str:
    """`tasks.3 ('id'): unsupported setup type 'x', metric 'y'; ...` for the 422 of a rejected run."""
    return "; ".join(f"tasks.{i} ({task.id!r}): unsupported {', '.join(unsupported[task.id])}"
                     for i, task in enumerate(tasks) if task.id in unsupported)


def queue_for(client: redis.Redis, priority: str) -> Queue:
    """The RQ queue of a priority (`high|default|low`)."""
    return rqjobs.queue(keys.QUEUE_NAMES[priority], client)


def enqueue_run(client: redis.Redis, request: RunRequest, settings: ProducerSettings,
                skip: dict[str, list[str]] | None = None, quarantined: Collection[str] = ()) -> EnqueueResult:
    """Store the run and enqueue one RQ job per (task, rollout index), with deterministic job ids, in
    pipelined batches of `settings.enqueue_batch` jobs.

    Re-submitting with the same idempotency key returns the first run and enqueues whatever that
    submission did not (a producer that crashed mid-loop leaves the run without its `enqueued` flag:
    the retry completes it); re-submitting the same run id enqueues only rollouts that do not exist
    yet (unique job ids), so no work is ever duplicated. The idempotency key lives `run_ttl_s` seconds.
    The request is fully validated before this is called, so a rejected run enqueues nothing.
    Tasks in `quarantined` are not enqueued either: their rollouts are recorded `quarantined`.
    Tasks in `skip` (task id -> unsupported features) are not enqueued: their rollouts are recorded
    as `unsupported` at once. An adaptive run starts with `adaptive.min_rollouts` per task and is
    handed to the adaptive controller (`adaptive.py`), which adds more.
    """
    skip = skip or {}
    run_id = request.run_id or _new_run_id()
    if request.idempotency_key:
        idem = keys.idempotency(request.idempotency_key)
        if not client.set(idem, run_id, nx=True, ex=settings.run_ttl_s):
            existing: Any = client.get(idem)
            run_id = existing.decode() if isinstance(existing, bytes) else str(existing)
            if client.exists(keys.run_enqueued(run_id)):
                meta = load_run_meta(client, run_id)
                total = meta.total_rollouts if meta else 0
                return EnqueueResult(run_id=run_id, enqueued=0, already_present=total, created=False)

    created = load_run_meta(client, run_id) is None
    queue = queue_for(client, request.priority.value)
    if created:
        save_run_meta(
            client,
            RunMeta(
                run_id=run_id,
                created_at=time.time(),
                total_rollouts=len(request.tasks) * request.initial_rollouts,
                queue=queue.name,
                priority=request.priority.value,
                rollouts_per_task=request.initial_rollouts,
                max_steps=request.max_steps,
                model=request.model,
                policy_version=request.policy_version,
                task_ids=[t.id for t in request.tasks],
                domains={t.id: t.effective_domain for t in request.tasks},
                adaptive=request.adaptive,
            ),
            ttl_s=settings.run_ttl_s,
        )
    enqueued = present = skipped = 0
    batch: list[Job] = []
    for task in request.tasks:
        if task.id in quarantined:
            _record_skipped(client, run_id, task, request.initial_rollouts, RolloutStatus.QUARANTINED,
                            "not run: the task is quarantined as flaky (GET /v1/quarantine)", settings.run_ttl_s)
            skipped += request.initial_rollouts
            continue
        if task.id in skip:
            _record_skipped(client, run_id, task, request.initial_rollouts, RolloutStatus.UNSUPPORTED,
                            f"not run: unsupported {', '.join(skip[task.id])}", settings.run_ttl_s)
            skipped += request.initial_rollouts
            continue
        for index in range(request.initial_rollouts):
            batch.append(_rollout_job(queue, request, run_id, task, index, settings))
            if len(batch) >= settings.enqueue_batch:
                done, there = enqueue_unique_batch(queue, batch)
                enqueued, present, batch = enqueued + done, present + there, []
    done, there = enqueue_unique_batch(queue, batch)
    if request.adaptive is not None and created:
        _start_adaptive(client, run_id, request, [*skip, *quarantined])
    client.set(keys.run_enqueued(run_id), "1")
    return EnqueueResult(run_id=run_id, enqueued=enqueued + done, already_present=present + there,
                         created=created, skipped=skipped)


def enqueue_rollouts(client: redis.Redis, queue: Queue, settings: ProducerSettings, run_id: str, task: OSWorldTask,
                     indices: range, request: RunRequest) -> tuple[int, int]:
    """Enqueue the rollouts `indices` of one task (deterministic job ids, RQ `unique`, one pipeline);
    returns (enqueued now, already present)."""
    return enqueue_unique_batch(queue, [_rollout_job(queue, request, run_id, task, i, settings) for i in indices])


def _rollout_job(queue: Queue, request: RunRequest, run_id: str, task: OSWorldTask, index: int,
                 settings: ProducerSettings) -> Job:
    """The RQ job of one rollout (not saved yet). Infrastructure retries go to the front of the
    queue (RQ `Retry` `enqueue_at_front`): a rollout hit by a fault runs again before fresh work."""
    job = RolloutJob(run_id=run_id, task=task, rollout_index=index, max_steps=request.max_steps,
                     agent=request.agent, agent_options=request.agent_options, model=request.model,
                     sampling=request.sampling,
                     policy_version=request.policy_version, max_staleness=request.max_staleness)
    # RQ picks interval[len - retries_left]: a list longer than `max` would skip its first intervals.
    intervals = settings.retry_intervals_s[:settings.max_infra_retries] or [0]
    retry = Retry(max=settings.max_infra_retries, interval=intervals, enqueue_at_front=True) \
        if settings.max_infra_retries > 0 else None
    rq_job = queue.create_job(
        ROLLOUT_JOB_FUNC,
        kwargs={"payload": job.model_dump(mode="json")},
        job_id=job.job_id,
        timeout=settings.job_timeout_s,
        result_ttl=settings.result_ttl_s,
        failure_ttl=settings.result_ttl_s,
        retry=retry,
        on_failure=Callback(ON_FAILURE_CALLBACK),
        description=f"rollout {job.rollout_id}",
        meta={"run_id": run_id, "rollout_id": job.rollout_id},
    )
    # Enqueued at the back now; every later (re)enqueue by RQ's scheduler goes to the front:
    # `Retry(enqueue_at_front=True)` alone misses scheduled retries of jobs whose worker died.
    rq_job.enqueue_at_front = True
    return rq_job


def _start_adaptive(client: redis.Redis, run_id: str, request: RunRequest, skip: list[str]) -> None:
    """Hand an adaptive run to the controller: the request (to build more jobs), per-task counts,
    skipped tasks already settled."""
    pipe = client.pipeline(transaction=True)
    pipe.set(keys.adaptive_request(run_id), request.model_dump_json())
    pipe.hset(keys.run_task_rollouts(run_id), mapping={t.id: request.initial_rollouts for t in request.tasks})
    if skip:
        pipe.sadd(keys.run_settled(run_id), *skip)
    pipe.sadd(keys.ADAPTIVE_RUNS, run_id)
    pipe.execute()


def _record_skipped(client: redis.Redis, run_id: str, task: OSWorldTask, rollouts: int, status: RolloutStatus,
                    error: str, ttl_s: int) -> None:
    for index in range(rollouts):
        record_rollout(
            client,
            RolloutRecord(
                rollout_id=make_rollout_id(run_id, task.id, index),
                run_id=run_id,
                task_id=task.id,
                rollout_index=index,
                domain=task.effective_domain,
                status=status,
                error=error,
                ended_at=time.time(),
            ),
            ttl_s=ttl_s,
        )


def cancel_run(client: redis.Redis, run_id: str) -> int:
    """Cancel a run: set its flag (runners stop at the next step) and cancel its queued jobs.

    Returns how many queued rollouts were cancelled. Raises: KeyError when the run is unknown.
    """
    meta = load_run_meta(client, run_id)
    if meta is None:
        raise KeyError(run_id)
    client.set(keys.run_cancelled(run_id), "1")
    meta.cancelled = True
    save_run_meta(client, meta)
    cancelled = 0
    counts = rt.hgetall(client, keys.run_task_rollouts(run_id))
    for task_id in meta.task_ids:
        for index in range(int(counts.get(task_id.encode(), meta.rollouts_per_task))):
            job_id = rq_job_id(run_id, task_id, index)
            try:
                job = rqjobs.fetch(job_id, client)
            except NoSuchJobError:
                continue
            if job.get_status(refresh=True) in ("queued", "scheduled", "deferred"):
                job.cancel()
                record_rollout(
                    client,
                    RolloutRecord(
                        rollout_id=make_rollout_id(run_id, task_id, index),
                        run_id=run_id,
                        task_id=task_id,
                        rollout_index=index,
                        domain=meta.domains.get(task_id, "default"),
                        status=RolloutStatus.CANCELLED,
                        attempt=attempts.current(client, make_rollout_id(run_id, task_id, index)) or 1,
                    ),
                )
                cancelled += 1
    return cancelled


def queue_stats(client: redis.Redis) -> list[dict[str, Any]]:
    """Per queue: depth (waiting jobs), started, failed, deferred, scheduled, finished, workers."""
    workers = Worker.all(connection=client, serializer=rqjobs.SERIALIZER)
    stats = []
    for priority, name in keys.QUEUE_NAMES.items():
        queue = rqjobs.queue(name, client)
        stats.append(
            {
                "queue": name,
                "priority": priority,
                "depth": queue.count,
                "started": queue.started_job_registry.count,
                "failed": queue.failed_job_registry.count,
                "deferred": queue.deferred_job_registry.count,
                "scheduled": queue.scheduled_job_registry.count,
                "finished": queue.finished_job_registry.count,
                "workers": sum(1 for w in workers if name in w.queue_names()),
            }
        )
    return stats


def _new_run_id() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"

