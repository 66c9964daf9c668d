"""The runner's RQ worker process (services/runner/worker.py) on a real redis-server: its RQ scheduler process
dies with it when it is killed (a surviving scheduler kept the dead worker's Redis sockets open, so a BLPOP
the worker had pending went on taking jobs for nobody), a stop signal that comes before RQ's handlers are
installed still releases the scheduler's lock, and `make_worker` picks the worker class of the settings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import redis
from rq import Queue

from common.polling import wait_until
from common.processes import child_pids
from services.cli.processes import ManagedProcess
from services.runner.settings import RunnerSettings
from services.runner.worker import InlineRolloutWorker, RolloutWorker, ThreadedInlineRolloutWorker, make_worker


def _gone(pid: int) -> bool:
    """Process `pid` exited (or is a zombie nobody reaped yet)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_killed_workers_scheduler_dies_with_it(redis_url: str, tmp_path: Path) -> None:
    worker = ManagedProcess(name="runner", module="services.runner", env={
        "REDIS_URL": redis_url, "RUNNER_EXECUTION": "inline", "RUNNER_CONCURRENCY": "2",
        "RUNNER_ENV_PROVIDER": "static", "RUNNER_METRICS_PORT": "0", "RUNNER_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": os.getcwd()}, log_path=tmp_path / "runner.log").start()
    assert worker.process is not None
    try:
        client = redis.Redis.from_url(redis_url)
        wait_until(lambda: client.keys("rq:scheduler:*"), 60, "the worker's RQ scheduler to register")
        (scheduler,) = child_pids(worker.process.pid)
        os.kill(worker.process.pid, signal.SIGKILL)
        wait_until(lambda: _gone(scheduler), 10, "the scheduler process to die with its worker")
        client.close()
    finally:
        worker.stop()


#: A runner whose RQ scheduler start is followed at once by a SIGTERM: the signal lands between the scheduler's
#: start (the lock taken) and RQ's signal handlers, the window that killed pooled workers under load.
_STOPPED_RIGHT_AFTER_SCHEDULER_START = """
import os, signal
from rq.scheduler import RQScheduler
from services.runner.worker import run_worker
start = RQScheduler.start
def start_then_stop(self):
    process = start(self)
    os.kill(os.getpid(), signal.SIGTERM)
    return process
RQScheduler.start = start_then_stop
run_worker()
"""


@pytest.mark.parametrize("execution", [{"RUNNER_EXECUTION": "fork"},
                                       {"RUNNER_EXECUTION": "inline", "RUNNER_CONCURRENCY": "2"}])
def test_a_stop_before_rqs_signal_handlers_still_releases_the_scheduler_lock(
        private_redis: str, tmp_path: Path, execution: dict[str, str]) -> None:
    env = {**os.environ, "REDIS_URL": private_redis, "RUNNER_ENV_PROVIDER": "static", "RUNNER_METRICS_PORT": "0",
           "RUNNER_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": os.getcwd(), **execution}
    done = subprocess.run([sys.executable, "-c", _STOPPED_RIGHT_AFTER_SCHEDULER_START], env=env, timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]  # a warm stop, not killed by the signal's default action
    client = redis.Redis.from_url(private_redis)
    assert "Acquired scheduler lock" in done.stderr
    assert client.keys("rq:scheduler-lock:*") == [] and client.keys("rq:scheduler:*") == []
    client.close()


@pytest.mark.parametrize(("env", "kind"), [
    ({}, RolloutWorker),
    ({"execution": "inline", "concurrency": 1}, InlineRolloutWorker),
    ({"execution": "inline", "concurrency": 3}, ThreadedInlineRolloutWorker),
])
def test_make_worker_follows_execution_and_concurrency(redis_url: str, env: dict[str, object], kind: type) -> None:
    client = redis.Redis.from_url(redis_url)
    worker = make_worker(RunnerSettings.model_validate(env), [Queue("q", connection=client)], client)
    assert type(worker) is kind
    client.close()


def test_concurrency_above_one_needs_inline_execution() -> None:
    with pytest.raises(ValueError, match="RUNNER_CONCURRENCY=2 needs RUNNER_EXECUTION=inline"):
        RunnerSettings(execution="fork", concurrency=2)
    assert RunnerSettings(execution="inline").rollouts_at_once > 1  # the measured default
    assert RunnerSettings().rollouts_at_once == 1  # fork: one work-horse at a time
