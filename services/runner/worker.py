"""Starts an RQ worker for rollouts: forking worker (heartbeats; or inline, `RUNNER_EXECUTION`, one rollout at a
time or `RUNNER_CONCURRENCY` at once in threads, `services/runner/threaded.py`), with the scheduler, queues by
priority.

Before taking jobs the worker starts its env provider's upkeep (`services/runner/envs`: static
URLs re-resolved, local envs, or the `kubernetes` pool keeper and reaper) and stops it on exit.
Around RQ's worker: a `Reaper` thread (dead work-horses' jobs back to RQ within ~30 s, recovered envs
re-admitted), a `work_horse_killed_handler` that records the lost attempt, and a reconnect loop: a
Redis outage (restart, failover) ends RQ's `work()` with a ConnectionError; the worker then starts a
new RQ worker once Redis answers, for up to `RUNNER_REDIS_RECONNECT_S` seconds of outage.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable
from multiprocessing.util import register_after_fork
from types import FrameType
from typing import Any

import redis
from rq import Queue, SimpleWorker, Worker
from rq.exceptions import StopRequested
from rq.job import Job
from rq.worker.base import BaseWorker

import services.runner.job as rollout_job  # loaded before forking: work-horses inherit it, never import it
from common import keys, rqjobs
from common.processes import die_with_parent
from common.service import redis_client, setup_logging, start_metrics_port
from common.settings import comma_list
from services.runner.envs import make_provider
from services.runner.metrics import metrics_registry
from services.runner.prometheus_multiprocess import mark_worker
from services.runner.reaper import Reaper
from services.runner.rq_callbacks import on_work_horse_killed
from services.runner.settings import RunnerSettings
from services.runner.threaded import ThreadedRolloutWorker

log = logging.getLogger(__name__)

#: The signals that stop a worker (RQ: warm shutdown, a second one cold).
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def preload() -> None:
    """Load now, in the worker, what each work-horse (a fresh fork per job) would otherwise load on
    its first use: Pillow's image plugins (`Image.open` of a screenshot)."""
    from PIL import Image

    Image.init()


class PickNoting(BaseWorker):
    """Notes when the worker picks each job, before it runs it (the start of the attempt's `startup_ms`,
    see `services.runner.timings.TIMING_KEYS`). Mixed in before an RQ worker class."""

    def execute_job(self, job: Job, queue: Queue) -> None:
        """Note the pick, then run the job as the RQ worker class after this one does."""
        rollout_job.note_picked()
        super().execute_job(job, queue)


class PromptSchedulerStop(BaseWorker):
    """Stops the RQ scheduler process this worker started at once when the worker stops. RQ's own
    `stop_scheduler` sends SIGTERM, which the scheduler notices only after its 1 s sleep: up to 1 s more
    for every worker stop (half of a local stack's stop). Killing it is safe: the scheduler moves due jobs
    to their queue in one Redis transaction (MULTI/EXEC), so each move is done or not; its locks are
    released here (only those it still owns) so another worker's scheduler takes over at once.

    The scheduler process also dies (SIGKILL) with its worker when the worker is killed. It is a fork of the
    worker and holds copies of the worker's Redis sockets: while it lived, a killed worker's connection stayed
    open, and a BLPOP the worker had pending (a worker running rollouts in threads waits in BLPOP meanwhile)
    went on taking jobs from the queue for a reader that is gone, so they were lost. Its locks then expire
    (61 s); meanwhile the reapers enqueue overdue scheduled retries (`services/runner/reaper.py`).

    RQ's `work()` starts the scheduler before it installs its signal handlers: a SIGTERM in between took the
    default action, killing the worker with the lock it had just taken (held for 61 s; seen as a flaky pool
    test on a loaded machine). A stop signal arriving from the scheduler's start until RQ's handlers are in
    place is held, then given to RQ's handler once it is installed (a warm stop that releases the lock)."""

    _held_stop: int | None = None

    def _start_scheduler(self, *args: Any, **kwargs: Any) -> None:
        register_after_fork(self, _die_with_parent(os.getpid()))  # runs in the scheduler process (multiprocessing)
        previous = {sig: signal.signal(sig, self._hold_stop) for sig in STOP_SIGNALS}
        try:
            super()._start_scheduler(*args, **kwargs)
        except BaseException:  # e.g. Redis gone: no RQ handlers follow, a held stop acts as it would have
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if self._held_stop is not None:
                signal.raise_signal(self._held_stop)
            raise

    def _hold_stop(self, signum: int, _frame: FrameType | None) -> None:
        self._held_stop = signum

    def _install_signal_handlers(self) -> None:
        super()._install_signal_handlers()
        if self._held_stop is not None:
            signum, self._held_stop = self._held_stop, None
            handler = signal.getsignal(signum)
            assert callable(handler)
            # RQ's handler (warm stop: scheduler stopped, handlers now for a cold stop) raises StopRequested to
            # leave its loop; before the loop, the loop's own stop check does that.
            with contextlib.suppress(StopRequested):
                handler(signum, None)
            self._stop_requested = True

    def stop_scheduler(self) -> None:
        """Kill the scheduler process, wait for it, release its locks and registration."""
        scheduler = self.scheduler
        process = scheduler._process if scheduler is not None else None
        if scheduler is None or process is None or not process.pid:
            return
        if process.exitcode is None:  # RQ calls this on shutdown and again in teardown: a reaped pid may be reused
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.join()
        scheduler.release_locks()
        scheduler.register_death()


def _die_with_parent(parent: int) -> Callable[[object], None]:
    def in_child(_: object) -> None:
        die_with_parent(signal.SIGKILL)
        if os.getppid() != parent:  # the worker died before the line above took effect
            os._exit(1)
    return in_child


class RolloutWorker(PickNoting, PromptSchedulerStop, Worker):
    """RQ's forking worker (`RUNNER_EXECUTION=fork`): a work-horse process per rollout."""


class InlineRolloutWorker(PickNoting, PromptSchedulerStop, SimpleWorker):
    """RQ's `SimpleWorker` (`RUNNER_EXECUTION=inline`, `RUNNER_CONCURRENCY=1`): runs each rollout in the worker
    process itself, no work-horse. RQ's job timeout still applies (SIGALRM in the worker's main thread)."""


class ThreadedInlineRolloutWorker(PromptSchedulerStop, ThreadedRolloutWorker):
    """`RUNNER_EXECUTION=inline` with `RUNNER_CONCURRENCY` > 1: up to that many rollouts at once in threads of the
    worker process (`services/runner/threaded.py`)."""


def make_worker(settings: RunnerSettings, queues: list[Queue], client: redis.Redis) -> BaseWorker:
    """The RQ worker of `settings` on `queues`: forking (`fork`), inline one rollout at a time, or inline with
    `settings.rollouts_at_once` slot threads."""
    common: dict[str, Any] = {"connection": client, "maintenance_interval": settings.maintenance_interval_s,
                              **rqjobs.WORKER_OPTIONS}
    if settings.execution == "fork":
        return RolloutWorker(queues, work_horse_killed_handler=on_work_horse_killed, **common)
    if settings.rollouts_at_once == 1:
        return InlineRolloutWorker(queues, **common)
    return ThreadedInlineRolloutWorker(queues, concurrency=settings.rollouts_at_once, **common)


def prepare_process(settings: RunnerSettings) -> None:
    """Once per runner process, before any worker runs in it (or is forked from it): logging and `preload`."""
    setup_logging(settings.log_level)
    preload()


def run_worker(settings: RunnerSettings | None = None) -> bool:
    """Run a forking RQ worker on the rollout queues until stopped (or drained with RUNNER_BURST), serving
    the runner's metrics port (`RUNNER_METRICS_PORT`).

    Queue order is high, default, low unless `RUNNER_QUEUES` (comma-separated names) says otherwise.
    Returns RQ's `work()` result. Raises: redis.ConnectionError when Redis stays unreachable for
    longer than `redis_reconnect_s`.
    """
    settings = settings or RunnerSettings()
    prepare_process(settings)
    start_metrics_port(settings.metrics_port, registry=metrics_registry())
    return work(settings)


def work(settings: RunnerSettings) -> bool:
    """The worker's own part of `run_worker`, also run by each worker of a pool (`services.runner.pool`):
    env provider, reaper and RQ worker of `settings.id`. `RUNNER_ID` is set to that id so its work-horses
    label pods with it. Returns and raises as `run_worker`."""
    os.environ["RUNNER_ID"] = settings.id
    mark_worker()  # its work-horses share one set of metric files (services/runner/prometheus_multiprocess.py)
    rollout_job.use_settings(settings)  # work-horses inherit them instead of parsing the environment per job
    provider_client = redis_client(settings.redis_url)
    provider = make_provider(settings, provider_client)
    provider.start()
    log.info("runner %s: env provider %s started", settings.id, settings.env_provider)
    names = comma_list(settings.queues) or keys.QUEUES_IN_PRIORITY_ORDER
    reaper = None if settings.burst else Reaper(
        redis_client(settings.redis_url), names, settings.reaper_interval_s, settings.reaper_grace_s,
        settings.env_recheck_s).start()
    lost_since: float | None = None
    try:
        while True:
            client = redis_client(settings.redis_url, socket_timeout_s=None)  # RQ blocks in BLPOP
            try:
                queues = [rqjobs.queue(name, client) for name in names]
                worker = make_worker(settings, queues, client)
                return bool(worker.work(with_scheduler=settings.with_scheduler, burst=settings.burst,
                                        logging_level=settings.log_level))
            except redis.ConnectionError as exc:
                lost_since = lost_since if lost_since is not None else time.monotonic()
                if time.monotonic() - lost_since > settings.redis_reconnect_s:
                    raise
                log.warning("redis unavailable (%r): starting a new worker once it answers", exc)
                time.sleep(1.0)
            finally:
                client.close()
            try:
                with redis_client(settings.redis_url) as probe:
                    probe.ping()
                lost_since = None
            except redis.ConnectionError:
                pass
    finally:
        if reaper is not None:
            reaper.stop()
        provider.stop()
        provider_client.close()
