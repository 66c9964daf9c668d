"""Several rollouts at once in one runner worker process (`RUNNER_EXECUTION=inline`, `RUNNER_CONCURRENCY` > 1).

`ThreadedRolloutWorker` is RQ's `SimpleWorker` with its job execution handed to `concurrency` slot threads:

- The main thread dequeues (RQ's own `dequeue_job_and_maintain_ttl`: intermediate queue, worker heartbeat,
  maintenance, scheduler) only while a slot is free; while all are busy it renews the worker's heartbeat every
  `job_monitoring_interval` seconds.
- A slot thread runs a job through RQ's whole lifecycle, as `SimpleWorker.execute_job` does: `prepare_execution`
  (started-job registry, execution record), `perform_job` (job heartbeat and TTL, the job function, success or
  failure handling with retries, `on_success`/`on_failure` callbacks, finished/failed registries). RQ keeps the
  running execution in `worker.execution`; here it is per thread (`threading.local`), so each slot's bookkeeping
  finds its own job's.
- Job timeouts: RQ's `TimerDeathPenalty` (a timer thread raising `JobTimeoutException` in the job's thread)
  instead of the default `UnixSignalDeathPenalty`, whose SIGALRM reaches only the main thread. As with SIGALRM,
  the exception lands in the rollout's Python code (not inside a blocking socket read: libcurl and Redis calls
  have their own timeouts), which records it as a `runner_error`.
- Each rollout runs `services.runner.job.run_rollout` with its own Redis client, env lease (and `LeaseKeeper`),
  model session (`X-Episode-Id`; the process's HTTP client keeps one libcurl handle per thread, the slot threads
  live as long as the worker, so their connections are kept across rollouts), job heartbeat and cancellation
  check per step. An exception inside one rollout is that rollout's `runner_error` (recorded by the job
  function) and RQ's failure of that job only; the other slots run on.
- SIGTERM or SIGINT (main thread only, as Python requires): warm shutdown, as RQ's: nothing more is dequeued,
  the worker waits for its in-flight rollouts to finish (renewing its heartbeat), then stops its scheduler and
  registers its death. A second signal (after 1 s): cold shutdown, the process exits with the rollouts
  unfinished; their job heartbeats stop, and a live worker's reaper hands them back to RQ within ~30 s, as for a
  killed worker (`services/runner/reaper.py`).
- Burst mode: the worker ends once the queues are empty and no rollout is in flight (a rollout's retry
  enqueued meanwhile is still picked up).

Thread-safety of what the rollouts share (checked for this worker): redis-py clients and the process's libcurl
client (`common.httpclient.HttpClient`, one handle per thread) are safe across threads; prometheus_client metrics
are (a lock per value; multiprocess files under one lock); the job module's per-job pick time is per thread
(`services.runner.job.note_picked`); the URL cache writes through unique temporary files; signal handlers are
only installed by the main thread, and they only set flags (a Redis call there could wait on a lock the
interrupted main thread holds). Worker-wide RQ fields (state, `current_job`) show one of the running jobs.
`TimerDeathPenalty` sets the timeout message on RQ's `JobTimeoutException` class, so with jobs of different
timeouts at once a timeout's message may name another job's limit (cosmetic). Relies on RQ 2's single
`worker.execution` attribute (rq 2.12); RQ's own several-executions-per-worker support (its main branch) would
replace the per-thread property.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from collections.abc import Callable
from functools import partial
from types import FrameType
from typing import Any

from rq import Queue, SimpleWorker
from rq.executions import Execution
from rq.job import Job
from rq.timeouts import TimerDeathPenalty
from rq.utils import now
from rq.worker.base import StopRequested, WorkerStatus

import services.runner.job as rollout_job

log = logging.getLogger(__name__)

#: Longest wait (s) of the main thread between two looks at a stop request while all slots are busy.
STOP_POLL_S = 0.5


class ThreadedRolloutWorker(SimpleWorker):
    """RQ `SimpleWorker` running up to `concurrency` jobs at once in slot threads (see the module docstring).

    `concurrency` >= 1; the other arguments are RQ's `Worker` ones. Raises ValueError for `concurrency` < 1."""

    death_penalty_class = TimerDeathPenalty

    def __init__(self, queues: Any, *, concurrency: int, **kwargs: Any) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self._local = threading.local()  # before RQ's __init__, which sets `execution`
        super().__init__(queues, **kwargs)
        self.concurrency = concurrency
        self._todo: queue.SimpleQueue[tuple[Job, Queue, float] | None] = queue.SimpleQueue()
        self._changed = threading.Condition()
        self._in_flight: set[str] = set()
        self._slots: list[threading.Thread] = []
        self._dequeuing = False
        self._cold = False

    # -- RQ's per-job state, per slot thread ----------------------------------------------------
    @property  # type: ignore[override]
    def execution(self) -> Execution | None:
        """The execution of the job this thread runs (RQ keeps one per worker; here one per slot thread)."""
        return getattr(self._local, "execution", None)

    @execution.setter
    def execution(self, value: Execution | None) -> None:
        self._local.execution = value

    @property
    def in_flight(self) -> int:
        """Jobs handed to the slots and not yet finished."""
        with self._changed:
            return len(self._in_flight)

    # -- dequeue and hand out ---------------------------------------------------------------------
    def execute_job(self, job: Job, queue: Queue) -> None:
        """Hand `job` to a slot thread, then return once a slot is free (or a stop was requested)."""
        picked = time.monotonic()
        self._start_slots()
        with self._changed:
            self._in_flight.add(job.id)
        self._todo.put((job, queue, picked))
        self._wait(partial(self._fewer_than, self.concurrency))

    def dequeue_job_and_maintain_ttl(self, timeout: int | None, max_idle_time: int | None = None
                                     ) -> tuple[Job, Queue] | None:
        """RQ's dequeue; in burst mode (`timeout` None) an empty queue ends the worker only once no job is in
        flight (a job may still enqueue its retry)."""
        while True:
            self._dequeuing = True
            try:
                result = super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
            finally:
                self._dequeuing = False
            with self._changed:
                running = len(self._in_flight)
            if result is not None or timeout is not None or running == 0 or self._stop_requested:
                return result
            self._wait(partial(self._fewer_than, running))

    def _fewer_than(self, count: int) -> bool:
        """Fewer than `count` jobs in flight, or a stop requested (checked under the lock)."""
        return len(self._in_flight) < count or self._stop_requested

    def _start_slots(self) -> None:
        while len(self._slots) < self.concurrency:
            thread = threading.Thread(target=self._slot, name=f"rollout-slot-{len(self._slots)}", daemon=True)
            thread.start()
            self._slots.append(thread)

    def _slot(self) -> None:
        """A slot thread: runs handed-out jobs through RQ's lifecycle until handed None."""
        while (item := self._todo.get()) is not None:
            job, queue, picked = item
            try:
                rollout_job.note_picked(picked)
                self.prepare_execution(job)
                self.perform_job(job, queue)  # catches the job's own exceptions: failure handling, callbacks
            except Exception:  # RQ's bookkeeping failed (Redis): the reaper hands the job back once its beat is gone
                log.exception("worker %s: RQ bookkeeping of job %s failed", self.name, job.id)
            finally:
                self.execution = None
                with self._changed:
                    self._in_flight.discard(job.id)
                    idle = not self._in_flight
                    self._changed.notify_all()
                if idle:
                    self._quietly(lambda: self.set_state(WorkerStatus.IDLE))

    def _quietly(self, call: Callable[[], object]) -> None:
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - worker-wide RQ fields are for dashboards; a Redis blip is no failure
            log.warning("worker %s: %r", self.name, exc)

    def _wait(self, done: Callable[[], bool]) -> None:
        """Wait until `done()` (checked under the lock), renewing the worker's heartbeat every
        `job_monitoring_interval` seconds meanwhile."""
        beat_at = time.monotonic() + self.job_monitoring_interval
        while True:
            with self._changed:
                if self._changed.wait_for(done, timeout=STOP_POLL_S):
                    return
            if time.monotonic() >= beat_at:
                self._quietly(self.heartbeat)
                beat_at = time.monotonic() + self.job_monitoring_interval

    # -- shutdown -------------------------------------------------------------------------------
    def _install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGTERM, self.request_stop)

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM/SIGINT: warm shutdown (dequeue no more, finish the in-flight rollouts); a second signal is cold."""
        self._shutdown_requested_date = now()
        signal.signal(signal.SIGINT, self.request_force_stop)
        signal.signal(signal.SIGTERM, self.request_force_stop)
        self._stop_requested = True  # Redis calls wait for `teardown`: the main thread may hold the pool's lock now
        log.info("worker %s: warm shutdown, finishing %d in-flight rollouts", self.name, len(self._in_flight))
        if self._dequeuing:  # blocked in Redis: leave it now (RQ does the same when idle)
            raise StopRequested()

    def request_force_stop(self, signum: int, frame: FrameType | None) -> None:
        """Second signal: cold shutdown (see the module docstring)."""
        self._cold = True
        super().request_force_stop(signum, frame)
        self._cold = False  # the signal came within 1 s of the first: ignored by RQ

    def teardown(self) -> None:
        """Wait for the in-flight jobs (not on a cold shutdown), stop the slot threads, then RQ's teardown."""
        try:
            if not self._cold:
                if self._stop_requested:
                    self._quietly(self.set_shutdown_requested_date)
                if self.scheduler is not None:  # another worker's scheduler takes over while this one drains
                    self.stop_scheduler()
                self._wait(lambda: not self._in_flight)
                for _ in self._slots:
                    self._todo.put(None)
                for thread in self._slots:
                    thread.join()
        finally:  # a cold stop while draining ends the wait with SystemExit: still deregister
            super().teardown()
