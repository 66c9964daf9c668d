"""Which failures are retried, where and when: a real producer over HTTP, a real redis-server, a forking RQ
worker running the real job function, two real Xvfb envs and the scripted policy (the vLLM stand-in)
over HTTP.

- a task whose setup fails (`setup_error`) or whose checker crashes (`runner_error`, a bug) runs once;
- an infrastructure failure (`model_error`) is retried before fresh work of the same priority and on
  the other env.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from rq import Worker

from common import keys, osworld_features, rqjobs
from common.envpool import EnvPool
from common.events import EpisodeEvent, decode_event
from common.run import rq_job_id
from common.runstate import load_rollouts
from services.desktop_env.launcher import LocalEnvLauncher
from services.runner.osworld import METRICS
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from services.task_producer.api import create_app as create_producer
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app

SCRIPT = {"instruction": "Give up at once", "replies": ["Thought: impossible\nAction: call_user()"]}
DONE_SCRIPT = {"instruction": "Say it is done", "replies": ["Thought: nothing to do\nAction: finished(content='ok')"]}


@pytest.fixture(scope="module")
def env_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    with LocalEnvLauncher(count=2, root_dir=tmp_path_factory.mktemp("envs")) as launcher:
        yield launcher.urls


@pytest.fixture()
def stack(request: pytest.FixtureRequest, redis_url: str, env_urls: list[str], tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Producer and policy over HTTP; the runner's settings in the environment (read by the job).
    The policy fails its first `request.param` chat requests (default 0)."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "give-up.json").write_text(json.dumps(SCRIPT))
    (scripts / "done.json").write_text(json.dumps(DONE_SCRIPT))
    client = redis.Redis.from_url(redis_url)
    for url in env_urls:
        EnvPool(client).register(url, "local")
    producer_settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store",
                                         max_infra_retries=2, retry_intervals_s=[0])
    policy_settings = ScriptedPolicySettings(scripts_dir=scripts, fail_first_n=getattr(request, "param", 0))
    with serve_app(create_producer(producer_settings)) as producer_url, \
            serve_app(create_policy(policy_settings)) as policy_url:
        for name, value in {"REDIS_URL": redis_url, "RUNNER_GATEWAY_URL": policy_url, "RUNNER_LEASE_WAIT_S": "30",
                            "RUNNER_CACHE_DIR": str(tmp_path / "cache"), "RUNNER_SETTLE_MAX_S": "0"}.items():
            monkeypatch.setenv(name, value)
        with httpx.Client(base_url=producer_url, timeout=30) as http:
            yield {"http": http, "redis": client}
    client.close()


def _task(task_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "instruction": SCRIPT["instruction"], "evaluator": {"func": "infeasible"}, **extra}


def _run(stack: dict[str, Any], run_id: str, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """Submit over HTTP, drain the queue with one forking RQ worker, return the run's records by task id."""
    response = stack["http"].post("/v1/runs", json={"tasks": tasks, "run_id": run_id, "max_steps": 3})
    assert response.status_code == 201, response.text
    worker = Worker([rqjobs.queue(keys.QUEUE_NAMES["default"], stack["redis"])], connection=stack["redis"],
                    **rqjobs.WORKER_OPTIONS)
    worker.work(burst=True, with_scheduler=False)
    return {r.task_id: r for r in load_rollouts(stack["redis"], run_id).values()}


def _starts(client: redis.Redis) -> list[EpisodeEvent]:
    events = [decode_event(fields)[0] for _, fields in client.xrange(keys.EVENTS_STREAM)]  # type: ignore[union-attr]
    return [e for e in events if isinstance(e, EpisodeEvent) and e.phase == "start"]


def test_a_failing_setup_step_is_a_setup_error_run_once(stack: dict[str, Any]) -> None:
    download = {"type": "download", "parameters": {"files": [{"url": "http://example.invalid/data.csv",
                                                              "path": "/home/user/data.csv"}]}}
    records = _run(stack, "setup-run", [_task("bad-setup", config=[download])])
    record = records["bad-setup"]
    assert (record.status, record.reward, record.attempt) == ("setup_error", None, 1)
    assert "example.invalid/data.csv" in (record.error or "")
    job = rqjobs.fetch(rq_job_id("setup-run", "bad-setup", 0), stack["redis"])
    assert job.get_status() == "finished"  # not failed, not scheduled for a retry


def test_a_crashing_checker_is_a_runner_error_with_traceback_run_once(
        stack: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def buggy_checker(result: Any, expected: Any = None) -> float:
        return len(result) / 0  # a bug in a metric (the forked work-horse inherits this registry)

    monkeypatch.setitem(METRICS, "buggy_checker", buggy_checker)
    implemented = osworld_features.catalogue()  # and in the producer's catalogue of the registries' names
    monkeypatch.setattr(osworld_features, "catalogue",
                        lambda: {**implemented, "metric": implemented["metric"] | {"buggy_checker"}})
    evaluator = {"func": "buggy_checker", "result": {"type": "vm_command_line", "command": "echo hi"}}
    records = _run(stack, "bug-run", [_task("bug", evaluator=evaluator, instruction=DONE_SCRIPT["instruction"])])
    record = records["bug"]
    assert (record.status, record.reward, record.attempt) == ("runner_error", None, 1)
    assert "ZeroDivisionError" in (record.error or "") and "buggy_checker" in (record.error or "")
    job = rqjobs.fetch(rq_job_id("bug-run", "bug", 0), stack["redis"])
    assert job.get_status() == "failed" and "RunnerBug" in (job.latest_result().exc_string or "")
    summary = stack["http"].get("/v1/runs/bug-run").json()
    assert summary["finished"] and summary["success_rate"] is None  # a bug is not a policy failure


@pytest.mark.parametrize("stack", [1], indirect=True)  # the first model request fails
def test_an_infra_failure_is_retried_first_and_on_the_other_env(stack: dict[str, Any]) -> None:
    records = _run(stack, "retry-run", [_task("a"), _task("b"), _task("c")])
    assert {t: (r.status, r.attempt) for t, r in records.items()} == \
        {"a": ("agent_fail", 2), "b": ("agent_fail", 1), "c": ("agent_fail", 1)}
    starts = [(e.task_id, e.attempt, e.env_id) for e in _starts(stack["redis"])]
    assert [(task, attempt) for task, attempt, _ in starts] == [("a", 1), ("a", 2), ("b", 1), ("c", 1)]
    assert starts[0][2] != starts[1][2]  # the retry leased the env the failed attempt did not use


def test_a_finished_rollout_records_where_its_env_time_went(stack: dict[str, Any]) -> None:
    from services.runner.worker import RolloutWorker  # notes when it picks the job, before the fork

    task = _task("timed", instruction=DONE_SCRIPT["instruction"])
    response = stack["http"].post("/v1/runs", json={"tasks": [task], "run_id": "timed-run", "max_steps": 3})
    assert response.status_code == 201, response.text
    RolloutWorker([rqjobs.queue(keys.QUEUE_NAMES["default"], stack["redis"])],
                  connection=stack["redis"], **rqjobs.WORKER_OPTIONS).work(burst=True, with_scheduler=False)
    (record,) = load_rollouts(stack["redis"], "timed-run").values()
    t = record.timings
    assert record.status == "completed" and record.num_steps == 1
    # the picked -> first model request window covers the work-horse's start, the lease and the reset
    assert 0 < t["job_start_ms"] < t["startup_ms"]
    assert t["startup_ms"] >= t["job_start_ms"] + t["lease_wait_ms"] + t["reset_ms"]
    assert t["reset_ms"] > 0 and t["release_ms"] > 0  # a desktop_env env is reset on lease and on release
    assert t["env_ms"] == pytest.approx(t["action_ms"] + t["screenshot_ms"]) and t["screenshot_ms"] > 0
    assert t["steps_ms"] >= t["model_ms"] + t["env_ms"] + t["publish_ms"]
    assert t["held_ms"] >= t["steps_ms"] + t["reset_ms"] + t["release_ms"] + t["eval_ms"]
    assert t["teardown_ms"] >= t["release_ms"]
    stats = stack["http"].get("/v1/runs/timed-run/stats").json()["env_utilisation"]
    assert stats["env_seconds"] == pytest.approx(t["held_ms"] / 1000.0)
    assert set(stats["shares"]) == {"in_step", "startup", "reset", "evaluation"}
    assert stats["shares"]["in_step"] == pytest.approx(t["steps_ms"] / t["held_ms"])
    assert sum(stats["shares"].values()) == pytest.approx(1.0)
