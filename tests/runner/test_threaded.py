"""Several rollouts at once in one runner worker (`RUNNER_EXECUTION=inline`, `RUNNER_CONCURRENCY`,
services/runner/threaded.py): a real redis-server, a real producer and the scripted policy (the vLLM stand-in)
over HTTP, two real Xvfb envs; the worker runs in the test process (burst mode, so a bug injected into the job
code reaches it) or as a `python -m services.runner` child (cancellation, SIGTERM).

- two rollouts of one worker overlap: their step events interleave in the stream (its order, not a clock);
- a rollout whose checker crashes records `runner_error` and fails its RQ job while the other rollout, still
  stepping then, finishes with its reward and a finished job;
- cancelling one run stops its rollout and leaves the other run's to finish;
- SIGTERM drains: the in-flight rollouts finish, nothing more is dequeued, the worker exits 0 and deregisters
  (signalled while its slots are all busy, and while it waits in BLPOP beside a running rollout);
- a second SIGTERM exits at once (deregistered), the rollout left `running` for the reapers;
- a job past its RQ timeout is stopped in its own slot thread (`TimerDeathPenalty`).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from rq import Queue, Worker
from rq.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry

import services.runner.job as rollout_job
from common import keys, osworld_features, rqjobs
from common.envpool import EnvPool
from common.events import EpisodeEvent, StepEvent, decode_event
from common.polling import wait_until
from common.run import make_rollout_id, rq_job_id
from common.runstate import load_rollout, load_rollouts
from common.status import RolloutStatus
from services.cli.processes import ManagedProcess
from services.desktop_env.launcher import LocalEnvLauncher
from services.runner.osworld import METRICS
from services.runner.settings import RunnerSettings
from services.runner.threaded import ThreadedRolloutWorker
from services.runner.worker import make_worker
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from services.task_producer.api import create_app as create_producer
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app


def _slow(name: str, waits: int) -> dict[str, Any]:
    """A script that waits `waits` steps (RUNNER_WAIT_ACTION_S each), then gives up: `infeasible` scores it 1.0."""
    return {"instruction": f"Task {name}: wait, then give up",
            "replies": ["Thought: waiting\nAction: wait()"] * waits + ["Thought: impossible\nAction: call_user()"]}


SLOW = _slow("slow", 4)
MEDIUM = _slow("medium", 16)
LONG = _slow("long", 30)
DONE = {"instruction": "Task quick: say it is done", "replies": ["Thought: done\nAction: finished(content='ok')"]}
QUEUE = keys.QUEUE_NAMES["default"]


@pytest.fixture(scope="module")
def env_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    with LocalEnvLauncher(count=2, root_dir=tmp_path_factory.mktemp("envs")) as launcher:
        yield launcher.urls


@pytest.fixture()
def stack(redis_url: str, env_urls: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
          ) -> Iterator[dict[str, Any]]:
    """Producer and policy over HTTP, the envs registered; the runner's settings (inline, 2 rollouts at once)."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name, script in {"slow": SLOW, "medium": MEDIUM, "long": LONG, "done": DONE}.items():
        (scripts / f"{name}.json").write_text(json.dumps(script))
    client = redis.Redis.from_url(redis_url)
    for url in env_urls:
        EnvPool(client).register(url, "local")
    producer = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store", max_infra_retries=0)
    with serve_app(create_producer(producer)) as producer_url, \
            serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts))) as policy_url, \
            httpx.Client(base_url=producer_url, timeout=30) as http:
        env = {"REDIS_URL": redis_url, "RUNNER_GATEWAY_URL": policy_url, "RUNNER_EXECUTION": "inline",
               "RUNNER_CONCURRENCY": "2", "RUNNER_LEASE_WAIT_S": "60", "RUNNER_SETTLE_MAX_S": "0",
               "RUNNER_WAIT_ACTION_S": "0.5", "RUNNER_CACHE_DIR": str(tmp_path / "cache"), "RUNNER_METRICS_PORT": "0",
               "RUNNER_ENV_PROVIDER": "local"}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        settings = RunnerSettings(burst=True, with_scheduler=False)
        monkeypatch.setattr(rollout_job, "_settings", settings)  # the in-process worker's jobs use these
        yield {"http": http, "redis": client, "env": env, "settings": settings, "tmp": tmp_path}
    client.close()


def _task(task_id: str, script: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "instruction": script["instruction"], "evaluator": {"func": "infeasible"}, **extra}


def _submit(stack: dict[str, Any], run_id: str, tasks: list[dict[str, Any]], rollouts: int = 1) -> None:
    response = stack["http"].post("/v1/runs", json={"tasks": tasks, "run_id": run_id, "max_steps": 40,
                                                    "rollouts_per_task": rollouts})
    assert response.status_code == 201, response.text


def _work(stack: dict[str, Any]) -> None:
    """Drain the default queue with the worker `RUNNER_EXECUTION=inline`, `RUNNER_CONCURRENCY=2` make, here."""
    worker = make_worker(stack["settings"], [rqjobs.queue(QUEUE, stack["redis"])], stack["redis"])
    assert isinstance(worker, ThreadedRolloutWorker) and worker.concurrency == 2
    worker.work(burst=True, with_scheduler=False)


def _events(client: redis.Redis) -> list[Any]:
    """Every event of the stream, in stream order (XADD ids only grow)."""
    return [decode_event(fields)[0] for _, fields in client.xrange(keys.EVENTS_STREAM)]  # type: ignore[union-attr]


def _runs_of(events: list[Any], kind: type) -> list[str]:
    """The rollout id of each event of `kind`, in stream order, consecutive repeats collapsed."""
    order: list[str] = []
    for event in events:
        if isinstance(event, kind) and (not order or order[-1] != event.rollout_id):
            order.append(event.rollout_id)
    return order


def test_the_rollouts_of_one_worker_overlap(stack: dict[str, Any]) -> None:
    _submit(stack, "overlap", [_task("slow", SLOW)], rollouts=2)
    _work(stack)
    records = load_rollouts(stack["redis"], "overlap")
    assert {r.status for r in records.values()} == {RolloutStatus.AGENT_FAIL}
    assert [r.reward for r in records.values()] == [1.0, 1.0] and {r.num_steps for r in records.values()} == {5}
    assert len({r.env_id for r in records.values()}) == 2  # a lease each
    # Steps of one rollout sequential would give [a, b]; interleaved ones alternate in the stream.
    assert len(_runs_of(_events(stack["redis"]), StepEvent)) > 2
    assert FinishedJobRegistry(QUEUE, connection=stack["redis"]).count == 2
    assert StartedJobRegistry(QUEUE, connection=stack["redis"]).count == 0


def test_a_crashing_rollout_is_a_runner_error_and_the_other_finishes(
        stack: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def buggy_checker(result: Any, expected: Any = None) -> float:
        return len(result) / 0  # a bug in a metric

    monkeypatch.setitem(METRICS, "buggy_checker", buggy_checker)
    implemented = osworld_features.catalogue()
    monkeypatch.setattr(osworld_features, "catalogue",
                        lambda: {**implemented, "metric": implemented["metric"] | {"buggy_checker"}})
    bug = _task("bug", DONE, evaluator={"func": "buggy_checker", "result": {"type": "vm_command_line",
                                                                            "command": "echo hi"}})
    _submit(stack, "crash", [_task("medium", MEDIUM), bug])
    _work(stack)
    records = {r.task_id: r for r in load_rollouts(stack["redis"], "crash").values()}
    assert (records["bug"].status, records["bug"].reward) == (RolloutStatus.RUNNER_ERROR, None)
    assert "ZeroDivisionError" in (records["bug"].error or "")
    assert (records["medium"].status, records["medium"].reward, records["medium"].num_steps) == \
        (RolloutStatus.AGENT_FAIL, 1.0, 17)
    # The crash came while the other rollout ran: it started before the bug's end and stepped after it.
    events = _events(stack["redis"])

    def index(task_id: str, kind: type, phase: str | None = None) -> list[int]:
        return [i for i, e in enumerate(events) if isinstance(e, kind) and e.task_id == task_id
                and (phase is None or e.phase == phase)]

    (bug_end,) = index("bug", EpisodeEvent, "end")
    assert index("medium", EpisodeEvent, "start")[0] < bug_end < index("medium", StepEvent)[-1]
    assert rqjobs.fetch(rq_job_id("crash", "bug", 0), stack["redis"]).get_status() == "failed"
    assert rqjobs.fetch(rq_job_id("crash", "medium", 0), stack["redis"]).get_status() == "finished"
    assert FailedJobRegistry(QUEUE, connection=stack["redis"]).count == 1


def _worker_process(stack: dict[str, Any]) -> ManagedProcess:
    return ManagedProcess(name="runner", module="services.runner", env={
        **stack["env"], "RUNNER_WITH_SCHEDULER": "false", "PYTHONPATH": os.getcwd()},
        log_path=stack["tmp"] / "runner.log").start()


def _stepping(client: redis.Redis, run_id: str, task_id: str) -> bool:
    record = load_rollout(client, run_id, make_rollout_id(run_id, task_id, 0))
    return record is not None and record.status is RolloutStatus.RUNNING and any(
        isinstance(e, StepEvent) and e.run_id == run_id for e in _events(client))


def test_cancelling_one_run_leaves_the_other_running(stack: dict[str, Any]) -> None:
    client = stack["redis"]
    _submit(stack, "to-cancel", [_task("long", LONG)])
    _submit(stack, "to-keep", [_task("slow", SLOW)])
    worker = _worker_process(stack)
    try:
        wait_until(lambda: _stepping(client, "to-cancel", "long") and _stepping(client, "to-keep", "slow"),
                   90, "both runs' rollouts to step")
        assert stack["http"].delete("/v1/runs/to-cancel").status_code == 200
        ended = wait_until(lambda: (a := load_rollout(client, "to-cancel", make_rollout_id("to-cancel", "long", 0)))
                           and (b := load_rollout(client, "to-keep", make_rollout_id("to-keep", "slow", 0)))
                           and a.status.is_terminal and b.status.is_terminal and (a, b), 90, "both rollouts to end")
        cancelled, kept = ended
        assert cancelled.status is RolloutStatus.CANCELLED and cancelled.num_steps < 30
        assert (kept.status, kept.reward, kept.num_steps) == (RolloutStatus.AGENT_FAIL, 1.0, 5)
        assert worker.alive()
    finally:
        worker.stop()


@pytest.mark.parametrize("rollouts", [3, 1])  # 3: both slots busy, the main thread waits for one; 1: it is in BLPOP
def test_sigterm_finishes_the_in_flight_rollouts_and_takes_no_more(stack: dict[str, Any], rollouts: int) -> None:
    client = stack["redis"]
    _submit(stack, "drain", [_task("slow", SLOW)], rollouts=rollouts)
    worker = _worker_process(stack)
    assert worker.process is not None
    in_flight = min(rollouts, 2)
    try:
        running = wait_until(lambda: (r := [x for x in load_rollouts(client, "drain").values()
                                            if x.status is RolloutStatus.RUNNING]) and len(r) == in_flight and r,
                             90, f"{in_flight} rollouts to run")
        worker.process.send_signal(signal.SIGTERM)
        assert worker.process.wait(timeout=90) == 0, worker.log_tail()
        records = load_rollouts(client, "drain")
        for record in running:
            assert (records[record.rollout_id].status, records[record.rollout_id].reward) == \
                (RolloutStatus.AGENT_FAIL, 1.0)
        left = {r.rollout_index for r in records.values()} ^ set(range(rollouts))  # no record: never started
        assert Queue(QUEUE, connection=client).job_ids == [rq_job_id("drain", "slow", i) for i in left]
        assert StartedJobRegistry(QUEUE, connection=client).count == 0
        assert not [w for w in Worker.all(connection=client) if w.pid == worker.process.pid]
    finally:
        worker.stop()


def test_a_job_past_its_timeout_is_stopped_in_its_own_thread(redis_url: str) -> None:
    """RQ's `TimerDeathPenalty` raises the timeout in the slot thread running the job (SIGALRM would reach only
    the main thread), and the job beside it finishes."""
    client = redis.Redis.from_url(redis_url)
    queue = Queue("timeouts", connection=client)
    stuck = queue.enqueue("common.polling.wait_until", bool, 60, "nothing", job_timeout=1)  # a Python loop
    quick = queue.enqueue("common.polling.wait_until", object, 5, "at once")
    ThreadedRolloutWorker([queue], connection=client, concurrency=2).work(burst=True, with_scheduler=False)
    assert stuck.get_status(refresh=True) == "failed"
    assert "JobTimeoutException" in (stuck.latest_result().exc_string or "")  # type: ignore[union-attr]
    assert quick.get_status(refresh=True) == "finished"
    client.close()


def test_a_second_sigterm_exits_at_once_leaving_the_rollouts_to_the_reapers(stack: dict[str, Any]) -> None:
    client = stack["redis"]
    _submit(stack, "cold", [_task("long", LONG)])
    worker = _worker_process(stack)
    assert worker.process is not None
    try:
        wait_until(lambda: _stepping(client, "cold", "long"), 90, "the rollout to step")
        worker.process.send_signal(signal.SIGTERM)
        first = time.monotonic()
        wait_until(lambda: "warm shutdown" in worker.log_tail(), 10, "the warm shutdown to begin")
        # RQ ignores a second signal within 1 s of the first (a pool's and a terminal's duplicate): wait that out.
        wait_until(lambda: time.monotonic() - first > 1.2, 5, "RQ's 1 s window for duplicate signals to pass")
        worker.process.send_signal(signal.SIGTERM)
        worker.process.wait(timeout=10)  # now, long before the 30-step rollout would end (TimeoutExpired)
        record = load_rollout(client, "cold", make_rollout_id("cold", "long", 0))
        assert record is not None and record.status is RolloutStatus.RUNNING  # a reaper hands it back
        assert not [w for w in Worker.all(connection=client) if w.pid == worker.process.pid]  # deregistered
    finally:
        worker.stop()
