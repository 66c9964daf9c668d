"""A runner process with several RQ workers (`RUNNER_WORKERS`, services/runner/pool.py), on a real
redis-server: the workers are forked children that register with RQ, a killed worker is forked again, the
parent serves the metrics port, SIGTERM stops them all, and in burst mode drained workers are not replaced.
(Rollouts on pooled workers run in every stack test: `LocalStack` starts its runners as one pool.)"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from rq import Worker

from common.polling import free_port, http_ok, wait_until
from common.processes import child_pids, parent_pid
from services.cli.processes import ManagedProcess
from services.runner.pool import MAX_RESTART_DELAY_S, RESTART_DELAY_S, STABLE_S, restart_delay, worker_settings
from services.runner.settings import RunnerSettings


def _pool(redis_url: str, tmp_path: Path, workers: int, **env: str) -> ManagedProcess:
    return ManagedProcess(name="runners", module="services.runner", env={
        "REDIS_URL": redis_url, "RUNNER_WORKERS": str(workers), "RUNNER_ENV_PROVIDER": "static",
        "RUNNER_METRICS_PORT": env.pop("RUNNER_METRICS_PORT", "0"), "RUNNER_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": os.getcwd(), **env}, log_path=tmp_path / "runners.log").start()


def _live_workers(client: redis.Redis, pool_pid: int) -> set[int]:
    """Pids of registered RQ workers that are live children of the pool."""
    return {w.pid for w in Worker.all(connection=client) if w.pid and parent_pid(w.pid) == pool_pid}


@pytest.fixture()
def client(redis_url: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_url)
    yield connection
    connection.close()


def test_each_worker_has_its_own_id() -> None:
    settings = RunnerSettings(id="pod-a", workers=3)
    assert [worker_settings(settings, slot).id for slot in range(3)] == ["pod-a-w0", "pod-a-w1", "pod-a-w2"]
    assert settings.id == "pod-a"  # the pool's own settings are left as they were


def test_restart_delay_doubles_while_a_worker_keeps_dying_early() -> None:
    delays = [restart_delay(None, 0.1)]
    for _ in range(8):
        delays.append(restart_delay(delays[-1], 0.1))
    assert delays[:3] == [RESTART_DELAY_S, 2 * RESTART_DELAY_S, 4 * RESTART_DELAY_S]
    assert delays[-1] == MAX_RESTART_DELAY_S
    assert restart_delay(MAX_RESTART_DELAY_S, STABLE_S) == RESTART_DELAY_S  # it ran long enough: start over


def test_pool_forks_registers_replaces_a_killed_worker_and_stops_on_sigterm(
        redis_url: str, client: redis.Redis, tmp_path: Path) -> None:
    metrics_port = free_port()
    pool = _pool(redis_url, tmp_path, 3, RUNNER_METRICS_PORT=str(metrics_port))
    assert pool.process is not None
    try:
        first = wait_until(lambda: (pids := _live_workers(client, pool.process.pid)) and len(pids) == 3 and pids,
                           60, "three pooled workers to register")
        # The parent serves the metrics of all its workers.
        wait_until(lambda: http_ok(f"http://127.0.0.1:{metrics_port}/metrics"), 30, "the pool's metrics port")
        # Each worker has a process group of its own: killing one's group (it and its RQ scheduler, as the
        # chaos suite kills a worker) leaves its siblings, and the pool forks a new one.
        victim = min(first)
        assert os.getpgid(victim) == victim != os.getpgid(pool.process.pid)
        os.killpg(victim, signal.SIGKILL)
        replaced = wait_until(lambda: (pids := _live_workers(client, pool.process.pid)) and len(pids) == 3
                              and victim not in pids and pids, 30 + RESTART_DELAY_S, "the killed worker's replacement")
        assert first - {victim} <= replaced
        pool.process.send_signal(signal.SIGTERM)
        assert pool.process.wait(timeout=30) == 0
        assert not [pid for pid in replaced if parent_pid(pid) is not None], "a worker outlived its pool"
    finally:
        pool.stop()


def test_burst_pool_exits_once_its_workers_drained_the_queues(
        redis_url: str, client: redis.Redis, tmp_path: Path) -> None:
    pool = _pool(redis_url, tmp_path, 2, RUNNER_BURST="true")
    assert pool.process is not None
    try:
        assert pool.process.wait(timeout=60) == 0, pool.log_tail()
        log = (tmp_path / "runners.log").read_text()
        assert log.count("is pid") == 2, log  # two forks, none again: a drained worker is not replaced
    finally:
        pool.stop()


def test_stopped_workers_leave_no_scheduler_lock_or_process(private_redis: str, tmp_path: Path) -> None:
    """The worker holding RQ's scheduler lock kills its scheduler process when it stops (instead of waiting out
    the scheduler's 1 s sleep) and releases the lock and registration itself, so no lock outlives it."""
    client = redis.Redis.from_url(private_redis)
    pool = _pool(private_redis, tmp_path, 2)
    assert pool.process is not None
    try:
        workers = wait_until(lambda: (pids := _live_workers(client, pool.process.pid)) and len(pids) == 2 and pids,
                             60, "two pooled workers to register")
        schedulers = wait_until(lambda: [pid for worker in workers for pid in child_pids(worker)],
                                30, "a worker's RQ scheduler process")
        # The scheduler registers itself (`rq:scheduler:<name>`) once its process runs: wait for that too.
        wait_until(lambda: client.keys("rq:scheduler-lock:*") and client.keys("rq:scheduler:*"), 30,
                   "the scheduler's locks and registration")
        pool.process.send_signal(signal.SIGTERM)
        assert pool.process.wait(timeout=30) == 0
        assert client.keys("rq:scheduler-lock:*") == [] and client.keys("rq:scheduler:*") == []
        assert [pid for pid in schedulers if parent_pid(pid) is not None] == []
    finally:
        pool.stop()
        client.close()
