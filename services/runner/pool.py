"""Several RQ workers in one runner process tree (`RUNNER_WORKERS` > 1).

A runner process spends ~2 s of CPU importing its job code (the OSWorld evaluation layer: pandas, scipy,
scikit-image, ...) and holds it in ~300 MB. Run as N processes, N workers pay that N times, all at once
when a stack or a pod starts. Here the parent imports it once (`prepare_process`), then forks one worker
per slot: the workers share the parent's memory copy-on-write and start in milliseconds.

- Each worker is `services.runner.worker.work` with its own id (`<RUNNER_ID>-w<slot>`), Redis connections,
  env provider and reaper; it runs in a process group of its own (like a process of its own: killing a
  worker's group kills it and its RQ scheduler child, not its siblings) and gets SIGTERM if the parent
  dies (`common.processes.die_with_parent`).
- The parent serves the metrics port for all of them (prometheus_client multiprocess mode sums every
  process's files, see `services/runner/prometheus_multiprocess.py`), forks again a worker that dies (after
  `restart_delay`: 1 s, doubling up to 60 s while the worker keeps dying within a minute), and on SIGTERM
  or SIGINT passes SIGTERM on (each worker's warm RQ shutdown) and exits once every worker has.
- With `RUNNER_BURST`, a worker that drained the queues exits 0 and is not replaced; the parent exits when
  all have.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import traceback
from types import FrameType

from common.processes import die_with_parent
from common.service import start_metrics_port
from services.runner.metrics import metrics_registry
from services.runner.settings import RunnerSettings
from services.runner.worker import STOP_SIGNALS, prepare_process, work

log = logging.getLogger(__name__)

#: Seconds before a worker that died is forked again; doubled, up to `MAX_RESTART_DELAY_S`, while it keeps dying
#: within `STABLE_S` of its start (a worker that fails at once, e.g. Redis gone for good, must not spin).
RESTART_DELAY_S = 1.0
MAX_RESTART_DELAY_S = 60.0
STABLE_S = 60.0


def worker_settings(settings: RunnerSettings, slot: int) -> RunnerSettings:
    """The settings of worker `slot` (0-based): those of the pool with id `<id>-w<slot>`."""
    return settings.model_copy(update={"id": f"{settings.id}-w{slot}"})


def restart_delay(previous_s: float | None, lived_s: float) -> float:
    """Seconds to wait before forking again a worker that died after `lived_s` seconds, its previous delay
    being `previous_s` (None: none yet)."""
    if previous_s is None or lived_s >= STABLE_S:
        return RESTART_DELAY_S
    return min(previous_s * 2, MAX_RESTART_DELAY_S)


def _run_child(settings: RunnerSettings, slot: int, parent: int) -> None:
    """Body of a forked worker; never returns (exit 0 when RQ's `work()` ended normally, 1 on error)."""
    code = 1
    try:
        os.setpgid(0, 0)
        die_with_parent(signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the line above took effect
            os._exit(1)
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)  # RQ installs its own once it works
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked by the parent across the fork
        work(worker_settings(settings, slot))
        code = 0
    except BaseException:  # noqa: BLE001 - a forked child must never unwind into the parent's code
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # not the parent's atexit handlers: they belong to the parent


class WorkerPool:
    """Forks and supervises `settings.workers` workers of `settings` (see the module docstring)."""

    def __init__(self, settings: RunnerSettings) -> None:
        self.settings = settings
        self.children: dict[int, int] = {}  # pid -> slot
        self.started: dict[int, float] = {}  # slot -> monotonic time of its last fork
        self.delays: dict[int, float] = {}  # slot -> its last restart delay (s)
        self.stopping = False

    def _fork(self, slot: int) -> None:
        parent = os.getpid()
        # Blocked across the fork: the child must not run the parent's handler (it would signal its siblings),
        # and a stop arriving meanwhile must reach the new child too.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:
                _run_child(self.settings, slot, parent)
            self.children[pid] = slot
            self.started[slot] = time.monotonic()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        log.info("runner %s: worker %d is pid %d", self.settings.id, slot, pid)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.stopping = True
        for pid in list(self.children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def run(self) -> None:
        """Fork the workers and supervise them until stopped (or, in burst mode, all drained)."""
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_signal)
        for slot in range(self.settings.workers):
            self._fork(slot)
        start_metrics_port(self.settings.metrics_port, registry=metrics_registry())
        while self.children:
            pid, status = os.wait()
            if pid not in self.children:
                continue
            slot = self.children.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            if self.stopping or (self.settings.burst and code == 0):
                continue
            delay = self.delays[slot] = restart_delay(self.delays.get(slot), time.monotonic() - self.started[slot])
            log.warning("runner %s: worker %d (pid %d) exited with %d; forking it again in %.0f s",
                        self.settings.id, slot, pid, code, delay)
            time.sleep(delay)
            if self.stopping:
                continue
            self._fork(slot)


def run_pool(settings: RunnerSettings) -> None:
    """Import once, fork `settings.workers` workers and supervise them until stopped."""
    prepare_process(settings)
    WorkerPool(settings).run()
