"""Runner recovery with real processes (issue 15, point 1): runner workers are `python -m services.runner`
children, killed with SIGKILL; a real producer and the scripted policy (the vLLM stand-in) over HTTP,
two real Xvfb envs, a real redis-server.

- a work-horse killed on the final attempt ends its rollout (`env_error`), not `running` forever;
- a worker parent killed together with its work-horse: another worker's reaper hands the job back to
  RQ and the rollout is running again within 60 s, with the default settings;
- a finished rollout that RQ runs again (its process died after the record) is not run twice;
- an episode stopped inside the step loop records the steps it stored;
- `_release` after a lost lease leaves the env alone (no reset of someone else's episode);
- one reset per rollout: an env reset after its release is handed out without a second reset, an env
  freed by an expired lease (its owner died) is reset by its next leaser;
- an unhealthy env that answers again is re-admitted;
- a worker survives a Redis restart (AOF): it reconnects, and the rollout it was running ends (its
  attempt is handed back by the reaper and retried when RQ's worker gave it up during the outage).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from rq.registry import StartedJobRegistry

from common import keys, rqjobs
from common.env_client import DesktopEnvClient
from common.envhealth import readmit_recovered
from common.envpool import EnvPool
from common.events import decode_event
from common.polling import free_port, wait_until
from common.processes import parent_pid
from common.redis_server import RedisServerProcess
from common.run import RolloutJob, make_rollout_id
from common.runstate import load_rollout
from common.status import RolloutStatus
from services.cli.processes import ManagedProcess
from services.desktop_env.launcher import LocalEnvLauncher
from services.runner.envs import EnvRequest
from services.runner.envs.static import StaticProvider
from services.runner.job import run_rollout
from services.runner.reaper import Reaper
from services.runner.rollout import RolloutRunner
from services.runner.settings import RunnerSettings
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from services.task_producer.api import create_app as create_producer
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app

SLOW = {"instruction": "Wait a while, then finish",
        "replies": ["Thought: waiting\nAction: wait()"] * 8 + ["Thought: done\nAction: finished(content='ok')"]}


@pytest.fixture(scope="module")
def env_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    with LocalEnvLauncher(count=2, root_dir=tmp_path_factory.mktemp("envs")) as launcher:
        yield launcher.urls


class Stack:
    """Producer and policy in threads, runner workers as child processes."""

    def __init__(self, redis_url: str, env_urls: list[str], tmp_path: Path, retries: int) -> None:
        self.redis_url = redis_url
        self.tmp_path = tmp_path
        self.client = redis.Redis.from_url(redis_url)
        for url in env_urls:
            EnvPool(self.client).register(url, "local")
        scripts = tmp_path / "scripts"
        scripts.mkdir(exist_ok=True)
        (scripts / "slow.json").write_text(json.dumps(SLOW))
        self.exit = ExitStack()
        producer_settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store",
                                             max_infra_retries=retries)
        producer_url = self.exit.enter_context(serve_app(create_producer(producer_settings)))
        policy = create_policy(ScriptedPolicySettings(scripts_dir=scripts))
        self.policy_url = self.exit.enter_context(serve_app(policy))
        self.http = self.exit.enter_context(httpx.Client(base_url=producer_url, timeout=30))
        self.workers: list[ManagedProcess] = []

    def worker(self, **env: str) -> ManagedProcess:
        process = ManagedProcess(name=f"runner-{len(self.workers)}", module="services.runner", env={
            "REDIS_URL": self.redis_url, "RUNNER_GATEWAY_URL": self.policy_url, "RUNNER_ENV_PROVIDER": "local",
            "RUNNER_METRICS_PORT": "0", "RUNNER_SETTLE_MAX_S": "0", "RUNNER_WAIT_ACTION_S": "1",
            "RUNNER_CACHE_DIR": str(self.tmp_path / "cache"), "PYTHONPATH": os.getcwd(), **env},
            log_path=self.tmp_path / f"runner-{len(self.workers)}.log").start()
        self.workers.append(process)
        return process

    def submit(self, run_id: str) -> str:
        task = {"id": "slow", "instruction": SLOW["instruction"], "evaluator": {"func": "infeasible"}}
        response = self.http.post("/v1/runs", json={"tasks": [task], "run_id": run_id, "max_steps": 15})
        assert response.status_code == 201, response.text
        return make_rollout_id(run_id, "slow", 0)

    def record(self, run_id: str, rollout_id: str) -> Any:
        return load_rollout(self.client, run_id, rollout_id)

    def horse_pid(self, run_id: str) -> int:
        """The work-horse pid, from the job's heartbeat key (`{pid}@{host}`)."""
        raw = wait_until(lambda: self.client.get(keys.job_heartbeat(f"{run_id}__slow__0")), 30, "a heartbeat")
        return int(raw.decode().split("@")[0])

    def close(self) -> None:
        for process in self.workers:
            process.stop()
        self.exit.close()
        self.client.close()


@pytest.fixture()
def make_stack(redis_url: str, env_urls: list[str], tmp_path: Path) -> Iterator[Any]:
    stacks: list[Stack] = []

    def make(retries: int) -> Stack:
        stacks.append(Stack(redis_url, env_urls, tmp_path, retries))
        return stacks[-1]

    yield make
    for stack in stacks:
        stack.close()


def _running_step(stack: Stack, run_id: str, rollout_id: str) -> None:
    wait_until(lambda: (r := stack.record(run_id, rollout_id)) and r.status is RolloutStatus.RUNNING
               and stack.client.xlen(keys.EVENTS_STREAM) >= 2, 60, "the rollout to run its first step")


def test_work_horse_killed_on_the_final_attempt_ends_the_rollout(make_stack: Any) -> None:
    stack = make_stack(retries=0)
    stack.worker()
    rollout_id = stack.submit("kill-final")
    _running_step(stack, "kill-final", rollout_id)
    os.kill(stack.horse_pid("kill-final"), signal.SIGKILL)
    record = wait_until(lambda: (r := stack.record("kill-final", rollout_id)) and r.status.is_terminal and r,
                        30, "the killed rollout to end")
    assert record.status is RolloutStatus.ENV_ERROR and "work-horse died" in record.error
    assert stack.workers[0].alive()


def test_dead_worker_and_work_horse_are_reclaimed_within_60s(make_stack: Any) -> None:
    stack = make_stack(retries=2)
    first, second = stack.worker(), stack.worker()
    rollout_id = stack.submit("kill-both")
    _running_step(stack, "kill-both", rollout_id)
    horse = stack.horse_pid("kill-both")
    parent = next(p for p in (first, second) if p.process and _is_child(horse, p.process.pid))
    os.kill(parent.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
    os.kill(horse, signal.SIGKILL)
    killed_at = time.monotonic()
    wait_until(lambda: (r := stack.record("kill-both", rollout_id)) and r.attempt >= 2
               and r.status is RolloutStatus.RUNNING, 60, "the rollout to run again on the other worker")
    recovery_s = time.monotonic() - killed_at
    record = wait_until(lambda: (r := stack.record("kill-both", rollout_id)) and r.status.is_terminal and r,
                        90, "the retried rollout to finish")
    assert (record.status, record.num_steps) == (RolloutStatus.COMPLETED, 9), record  # the script from its start
    assert record.attempt == 2 and recovery_s < 60


def test_an_inline_worker_runs_rollouts_itself_and_a_dead_one_is_reclaimed(make_stack: Any) -> None:
    stack = make_stack(retries=2)
    fast_reaper = {"RUNNER_EXECUTION": "inline", "RUNNER_HEARTBEAT_TTL_S": "3", "RUNNER_REAPER_INTERVAL_S": "1",
                   "RUNNER_REAPER_GRACE_S": "1"}
    workers = [stack.worker(**fast_reaper), stack.worker(**fast_reaper)]
    rollout_id = stack.submit("inline")
    _running_step(stack, "inline", rollout_id)
    runs_it = stack.horse_pid("inline")
    holder = next((w for w in workers if w.process and w.process.pid == runs_it), None)
    assert holder is not None, f"pid {runs_it} runs the rollout: no worker of its own (a forked work-horse?)"
    os.kill(runs_it, signal.SIGKILL)
    record = wait_until(lambda: (r := stack.record("inline", rollout_id)) and r.status.is_terminal and r,
                        90, "the other inline worker to run the rollout again to its end")
    assert (record.status, record.num_steps) == (RolloutStatus.COMPLETED, 9), record  # the script from its start
    assert record.attempt == 2
    assert next(w for w in workers if w is not holder).alive()


def test_a_reaper_that_never_saw_a_job_beat_trusts_its_first_beat_marker(redis_url: str) -> None:
    """A reaper taking over from a dead worker's has never seen that worker's job beat: the job's first-beat
    marker (`keys.job_beat_seen`) lets it reclaim the job after the short grace, not the start-up one."""
    client = redis.Redis.from_url(redis_url)
    queue = rqjobs.queue("cua-default", client)
    registry = StartedJobRegistry(queue.name, connection=client, **rqjobs.REGISTRY_OPTIONS)
    for name in ("marked", "starting"):  # started (registry entry), no heartbeat key
        job = queue.enqueue("builtins.print", job_id=f"reaper-{name}")
        client.zadd(registry.key, {f"{job.id}:execution": time.time() + 600})
    client.set(keys.job_beat_seen("reaper-marked"), "1")
    reaper = Reaper(client, [queue.name], interval_s=1, grace_s=5, env_recheck_s=3600, startup_grace_s=60)
    assert reaper.run_once(now=100.0) == []
    assert reaper.run_once(now=106.0) == ["reaper-marked"]  # past the grace: its work-horse is gone
    assert not client.exists(keys.job_beat_seen("reaper-marked"))
    assert reaper.run_once(now=130.0) == []  # never beat: may still be starting
    assert reaper.run_once(now=166.0) == ["reaper-starting"]  # past grace + start-up grace
    client.close()


def _is_child(pid: int, parent: int) -> bool:
    return parent_pid(pid) == parent


def test_a_finished_rollout_run_again_by_rq_is_not_run_twice(make_stack: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    stack = make_stack(retries=2)
    stack.worker()
    rollout_id = stack.submit("twice")
    record = wait_until(lambda: (r := stack.record("twice", rollout_id)) and r.status.is_terminal and r, 90,
                        "the rollout to finish")
    starts_before = _episode_starts(stack.client)
    job = RolloutJob.model_validate({"run_id": "twice", "task": {"id": "slow", "instruction": SLOW["instruction"],
                                     "evaluator": {"func": "infeasible"}}, "rollout_index": 0, "max_steps": 15,
                                     "agent": "ui_tars_1_5", "model": "m", "sampling": {}})
    monkeypatch.setenv("REDIS_URL", stack.redis_url)
    result = run_rollout(job.model_dump(mode="json"))  # what RQ does when the process died after the record
    assert result["status"] == record.status.value and result["attempt"] == record.attempt == 1
    assert int(stack.client.get(keys.attempt_counter(rollout_id)) or 0) == 1  # no new attempt started
    assert _episode_starts(stack.client) == starts_before == 1  # no start event to wipe the trajectory


def _episode_starts(client: redis.Redis) -> int:
    events = [decode_event(fields)[0] for _, fields in client.xrange(keys.EVENTS_STREAM)]
    return sum(1 for e in events if getattr(e, "phase", None) == "start")


def test_an_episode_stopped_in_the_step_loop_records_its_steps(make_stack: Any, env_urls: list[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    stack = make_stack(retries=0)
    monkeypatch.setenv("REDIS_URL", stack.redis_url)
    settings = RunnerSettings(gateway_url=stack.policy_url, settle_max_s=0, wait_action_s=1, lease_wait_s=30)
    job = RolloutJob.model_validate({"run_id": "cut", "task": {"id": "slow", "instruction": SLOW["instruction"],
                                     "evaluator": {"func": "infeasible"}}, "rollout_index": 0, "max_steps": 15,
                                     "agent": "ui_tars_1_5", "model": "m", "sampling": {}})
    client = redis.Redis.from_url(stack.redis_url)
    runner = RolloutRunner(client, settings)

    def cancel_after_three_steps() -> None:
        wait_until(lambda: _steps_published(client) >= 3, 60, "three steps")
        client.set(keys.run_cancelled("cut"), "1")

    canceller = threading.Thread(target=cancel_after_three_steps, daemon=True)
    canceller.start()
    outcome = runner.run(job, attempt=1, final_attempt=True)
    canceller.join(timeout=5)
    assert outcome.status is RolloutStatus.CANCELLED
    steps = _steps_published(client)
    assert steps >= 3 and outcome.num_steps == steps
    record = load_rollout(client, "cut", job.rollout_id)
    assert record is not None and record.num_steps == steps


def _steps_published(client: redis.Redis) -> int:
    entries = client.xrange(keys.EVENTS_STREAM)
    return sum(1 for _, fields in entries if fields.get(b"type") == b"step")


def test_release_after_a_lost_lease_leaves_the_env_alone(redis_url: str, env_urls: list[str]) -> None:
    client = redis.Redis.from_url(redis_url)
    pool = EnvPool(client)
    for url in env_urls:
        pool.register(url, "local")
    lease = pool.lease("mine#1", 2000, 10)
    env = DesktopEnvClient(lease.env.url)
    marker = "~/Desktop/other-runner-was-here"
    env.execute(["bash", "-c", f"touch {marker}"])
    client.set(keys.env_lease(lease.env.env_id), "someone-else#1", px=60_000)  # expired, leased by another
    RolloutRunner(client, RunnerSettings(redis_url=redis_url))._release(env, lease)
    with DesktopEnvClient(lease.env.url) as check:
        assert check.execute(["bash", "-c", f"test -f {marker}"]).returncode == 0  # not reset
        check.reset()
    assert client.get(keys.env_lease(lease.env.env_id)) == b"someone-else#1"  # not released either


def test_one_reset_per_rollout_and_a_dead_owners_env_is_reset_on_lease(redis_url: str, env_urls: list[str]) -> None:
    client = redis.Redis.from_url(redis_url)
    provider = StaticProvider(EnvPool(client), 10_000, env_urls[:1], "desktop_env", resolve_interval_s=60)
    provider.start()
    try:
        marker = "~/Desktop/left-behind"
        first = provider.acquire(EnvRequest("a#1", "r", "a"), 10)
        with DesktopEnvClient(first.env.url) as env:
            assert provider.prepare(first, env) is True  # new to the pool: no clean mark, reset
            env.execute(["bash", "-c", f"touch {marker}"])
            provider.release(first, env)  # reset here, off the next rollout's start-up
            assert env.execute(["bash", "-c", f"test -f {marker}"]).returncode == 1
            env.execute(["bash", "-c", f"touch {marker}"])  # would vanish if the next lease reset again
        second = provider.acquire(EnvRequest("b#1", "r", "b"), 10)
        with DesktopEnvClient(second.env.url) as env:
            assert provider.prepare(second, env) is False
            assert env.execute(["bash", "-c", f"test -f {marker}"]).returncode == 0
        client.pexpire(keys.env_lease(second.env.env_id), 1)  # its owner died: the lease expires, no reset
        third = provider.pool.lease("c#1", 10_000, 10)
        with DesktopEnvClient(third.env.url) as env:
            assert provider.prepare(third, env) is True
            assert env.execute(["bash", "-c", f"test -f {marker}"]).returncode == 1
            provider.release(third, env)
    finally:
        provider.stop()


def test_an_unhealthy_env_that_answers_again_is_readmitted(redis_url: str, env_urls: list[str]) -> None:
    client = redis.Redis.from_url(redis_url)
    pool = EnvPool(client)
    for url in env_urls:
        pool.register(url, "local")
    pool.register("http://127.0.0.1:9", "local", env_id="gone")  # nothing listens there
    for env in pool.envs():
        pool.mark_unhealthy(env.env_id)
    readmitted = readmit_recovered(pool)
    assert sorted(readmitted) == sorted(e.env_id for e in pool.envs() if e.env_id != "gone")
    assert pool.status().unhealthy == 1 and pool.status().leased == 0


def test_a_worker_survives_a_redis_restart_mid_rollout(env_urls: list[str], tmp_path: Path) -> None:
    server = RedisServerProcess(tmp_path / "redis", port=free_port()).start()
    stack = Stack(server.url, env_urls, tmp_path, retries=2)
    try:
        # The lost attempt is reclaimed by the reaper: short heartbeat and grace keep the test short.
        worker = stack.worker(RUNNER_HEARTBEAT_TTL_S="3", RUNNER_REAPER_INTERVAL_S="1", RUNNER_REAPER_GRACE_S="1")
        rollout_id = stack.submit("restart")
        _running_step(stack, "restart", rollout_id)
        assert server.process is not None
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        time.sleep(2)  # the outage itself (what the test injects), not a wait for a condition
        server.start()
        record = wait_until(lambda: (r := stack.record("restart", rollout_id)) and r.status.is_terminal and r,
                            120, "the rollout to finish after the restart")
        assert (record.status, record.num_steps) == (RolloutStatus.COMPLETED, 9), record  # the script from its start
        assert worker.alive(), worker.log_tail()
        second = stack.submit("after-restart")
        wait_until(lambda: (r := stack.record("after-restart", second)) and r.status.is_terminal, 120,
                   "a rollout submitted after the restart to finish")
    finally:
        stack.close()
        server.stop()

