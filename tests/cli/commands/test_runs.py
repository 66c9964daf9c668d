"""The CLI's client commands against a real producer (real redis-server, real HTTP, a file store):
`submit`, `runs`, `stats`, `watch`, `cancel`, `envs`, `queues`, `trajectory`, `--json`, `CUA_PRODUCER`,
`CUA_TOKEN`, `--fail-on-error`, and the exit codes (0, 1, 2 with one line on stderr).

No runner workers run here: submitted rollouts stay queued, and finished runs are made by recording
rollout results in Redis as a runner would (`common.runstate.record_rollout`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi import Request
from typer.testing import CliRunner

from common.envpool import EnvPool
from common.objectstore import LocalDirStore
from common.polling import free_port
from common.run import make_rollout_id
from common.runstate import RolloutRecord, record_rollout
from common.status import RolloutStatus
from services.cli.main import app
from services.task_producer.api import create_app
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app

ROOT = Path(__file__).resolve().parents[3]
OS_TASKS = ROOT / "examples" / "tasks" / "os"


@pytest.fixture()
def producer(redis_url: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A real producer on a free port; `headers` records the Authorization header of every request."""
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store")
    api = create_app(settings)
    headers: list[str | None] = []

    @api.middleware("http")
    async def _record_auth(request: Request, call_next: Any) -> Any:
        headers.append(request.headers.get("authorization"))
        return await call_next(request)

    with serve_app(api) as url:
        yield {"url": url, "redis": redis_url, "store": tmp_path / "store", "headers": headers}


def cli(producer_url: str | None, *args: str, env: dict[str, str] | None = None) -> Any:
    """Run a command in-process with CUA_PRODUCER set (stdout and stderr kept apart)."""
    extra = {"CUA_PRODUCER": producer_url} if producer_url else {}
    return CliRunner().invoke(app, list(args), env={**extra, **(env or {})}, catch_exceptions=False)


def finish_run(redis_url: str, run_id: str, rewards: dict[str, float | None]) -> None:
    """Record every rollout of `run_id` as a runner would: `completed` with the reward, or `env_error`."""
    client = redis.Redis.from_url(redis_url)
    for task_id, reward in rewards.items():
        status = RolloutStatus.ENV_ERROR if reward is None else RolloutStatus.COMPLETED
        record_rollout(client, RolloutRecord(rollout_id=make_rollout_id(run_id, task_id, 0), run_id=run_id,
                                             task_id=task_id, rollout_index=0, domain="os", status=status,
                                             reward=reward, ended_at=time.time()))
    client.close()


def test_submit_runs_stats_queues_cancel_with_json(producer: dict[str, Any]) -> None:
    url = producer["url"]
    tasks = sorted(p.stem for p in OS_TASKS.glob("*.json"))
    submitted = cli(url, "submit", str(OS_TASKS), "--rollouts", "2", "--run-id", "cli-run", "--json")
    assert submitted.exit_code == 0, submitted.stderr
    assert json.loads(submitted.stdout) == {**json.loads(submitted.stdout), "run_id": "cli-run",
                                            "enqueued": 2 * len(tasks), "created": True}

    plain = cli(url, "submit", str(OS_TASKS), "--run-id", "cli-run-2")
    assert plain.exit_code == 0 and plain.stdout.strip().splitlines()[-1] == "cli-run-2"

    runs = json.loads(cli(url, "runs", "--json").stdout)["runs"]
    assert [r["run_id"] for r in runs] == ["cli-run-2", "cli-run"]
    assert runs[1]["total"] == 2 * len(tasks) and runs[1]["counts"] == {"queued": 2 * len(tasks)}
    assert "cli-run-2" in cli(url, "runs").stdout

    queues = {q["priority"]: q for q in json.loads(cli(url, "queues", "--json").stdout)["queues"]}
    assert queues["default"]["depth"] == 3 * len(tasks) and queues["high"]["depth"] == 0
    assert "depth" in cli(url, "queues").stdout

    stats = json.loads(cli(url, "stats", "cli-run", "--json").stdout)
    assert stats["finished"] is False and len(stats["rollouts"]) == 0 and stats["counts"]["queued"] == 12

    cancelled = cli(url, "cancel", "cli-run", "--json")
    assert json.loads(cancelled.stdout) == {"run_id": "cli-run", "cancelled_queued": 2 * len(tasks)}
    statuses = {r["status"] for r in json.loads(cli(url, "stats", "cli-run", "--json").stdout)["rollouts"]}
    assert statuses == {"cancelled"}
    assert json.loads(cli(url, "queues", "--json").stdout)["queues"][1]["depth"] == len(tasks)


def test_envs_lists_the_pool(producer: dict[str, Any]) -> None:
    pool = EnvPool(redis.Redis.from_url(producer["redis"]))
    pool.register("http://10.0.0.7:5000", provider="static")
    pool.register("http://10.0.0.8:5000", provider="static")
    pool.mark_unhealthy("10.0.0.8-5000")
    result = json.loads(cli(producer["url"], "envs", "--json").stdout)
    assert (result["total"], result["idle"], result["unhealthy"]) == (2, 1, 1)
    assert {e["env_id"]: e["state"] for e in result["envs"]} == {"10.0.0.7-5000": "idle", "10.0.0.8-5000": "unhealthy"}
    table = cli(producer["url"], "envs").stdout
    assert "http://10.0.0.7:5000" in table and "unhealthy" in table


def test_trajectory_shows_the_manifest_and_downloads_every_file(producer: dict[str, Any], tmp_path: Path) -> None:
    store = LocalDirStore(producer["store"])
    files = {"manifest.json": json.dumps({"status": "completed", "reward": 1.0, "num_steps": 2}).encode(),
             "image_0000.png": b"\x89PNG fake bytes", "step_0000.json": b'{"schema": "cua.step.v1"}',
             "reward.txt": b"1.0"}
    for name, data in files.items():
        store.put(f"run-t/os-hello-file_1/{name}", data)

    shown = cli(producer["url"], "trajectory", "run-t", "os-hello-file", "1", "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["manifest"]["reward"] == 1.0
    assert sorted(json.loads(shown.stdout)["files"]) == sorted(files)

    out = tmp_path / "download"
    table = cli(producer["url"], "trajectory", "run-t", "os-hello-file", "1", "--out", str(out))
    assert table.exit_code == 0 and "completed" in table.stdout
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files

    missing = cli(producer["url"], "trajectory", "run-t", "os-hello-file", "0")
    assert missing.exit_code == 2 and "HTTP 404" in missing.stderr and "os-hello-file_0" in missing.stderr


def test_fail_on_error_exits_1_only_for_a_finished_run_with_failures(producer: dict[str, Any]) -> None:
    url = producer["url"]
    # every os example task is submitted; unlisted ones get reward 1
    for run_id, rewards in (("good", {}), ("bad", {"os-count-lines": 0.0, "os-rename-reports": None})):
        submitted = cli(url, "submit", str(OS_TASKS), "--run-id", run_id, "--json")
        assert submitted.exit_code == 0, submitted.stderr
        every_task = [p.stem for p in OS_TASKS.glob("*.json")]
        finish_run(producer["redis"], run_id, {t: rewards.get(t, 1.0) for t in every_task})

    assert cli(url, "stats", "good", "--fail-on-error").exit_code == 0
    assert cli(url, "watch", "good", "--fail-on-error", "--json").exit_code == 0
    assert cli(url, "stats", "bad").exit_code == 0  # failures matter only with the flag
    failed = cli(url, "watch", "bad", "--fail-on-error", "--json")
    assert failed.exit_code == 1
    assert json.loads(failed.stdout)["finished"] is True
    line = failed.stderr.strip().splitlines()[-1]
    assert "2 of 6 rollouts did not succeed" in line and "1 env_error" in line and "completed/reward 0" in line
    assert cli(url, "stats", "bad", "--fail-on-error").exit_code == 1


def test_token_is_sent_as_bearer_when_set(producer: dict[str, Any]) -> None:
    cli(producer["url"], "queues")
    cli(producer["url"], "runs", env={"CUA_TOKEN": "s3cret"})
    assert producer["headers"] == [None, "Bearer s3cret"]


def run_app(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Call the console script's entry point (`app(...)`, exit-code contract included) in-process."""
    with pytest.raises(SystemExit) as exited:
        app(list(args))
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def test_exit_2_with_one_line_for_usage_and_connection_errors(producer: dict[str, Any],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    cases = {
        ("runs", "--producer", dead): f"cannot reach the producer at {dead}",
        ("stats", "no-such-run", "--producer", producer["url"]): "HTTP 404: run 'no-such-run' not found",
        ("cancel",): "Missing argument",
        ("watch", "x", "--bogus"): "No such option: --bogus",
        ("submit", "/nonexistent/tasks"): "/nonexistent/tasks",
        ("demo", "--tasks", "/nonexistent/tasks"): "/nonexistent/tasks",
        ("up", "--policy-url", "localhost:8000"): "--policy-url 'localhost:8000': must be an http://",
        ("up", "--redis-url", "redis://127.0.0.1:1/0"): "--redis-url 'redis://127.0.0.1:1/0': cannot reach",
        ("up", "--policy-url", "http://127.0.0.1:1", "--latency-ms", "50"): "--latency-ms",
        ("up", "--scripts", "/nonexistent/scripts"): "--scripts '/nonexistent/scripts': not a directory",
    }
    for args, message in cases.items():
        code, _, err = run_app(capsys, *args)
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
        assert message in err, (args, err)


def test_version_and_help_list_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    version = subprocess.run([sys.executable, "-m", "services.cli", "--version"], capture_output=True, text=True,
                             timeout=120, cwd=ROOT)
    assert version.returncode == 0 and version.stdout.startswith("cua-rollout "), version.stderr
    commands = {"up", "demo", "submit", "watch", "stats", "runs", "cancel", "envs", "queues", "trajectory",
                "coverage", "export", "diff", "rescore", "flaky", "quarantine", "init", "agents", "audit"}
    registered = {c.name or c.callback.__name__ for c in app.registered_commands if c.callback}
    assert registered == commands
    groups = {g.name for g in app.registered_groups}
    assert groups == {"cache"}
    commands |= groups
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).stdout
    assert all(f" {name} " in shown for name in commands), shown
