"""`cua-rollout up` with external parts, driven as a user would: the `up` process, then `submit`,
`watch --fail-on-error --json`, `envs`, `trajectory` against it, then SIGTERM.

External parts: Redis is the session's real redis-server (not started by `up`); the policy servers
are two scripted-policy processes started by this test. They are a MOCK of a GPU model server
(`services/scripted_policy`, OpenAI-compatible like vLLM): no GPU here, so they stand in for vLLM
servers on a GPU box, given to `up` with `--policy-url` (the gateway balances across them).
Trajectories go to moto's S3 server (the MinIO stand-in) through `--store-url` and `S3_*`.
Desktops are real local Xvfb envs started by `up` (`--display-base`).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import redis
from typer.testing import CliRunner

from common.envpool import EnvPool
from common.polling import GiveUp, free_port, http_ok, wait_until
from services.cli.commands.stack import load_expectations, mismatches
from services.cli.main import app
from services.cli.processes import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DISPLAY_BASE = 700 + os.getpid() % 200


@pytest.fixture()
def fake_vllms(tmp_path: Path) -> Iterator[list[str]]:
    """Two scripted-policy processes (MOCK of GPU model servers, standing in for two vLLM servers)."""
    servers = []
    for i in range(2):
        port = free_port()
        servers.append(ManagedProcess(
            name=f"fake-vllm-{i}", module="services.scripted_policy", log_path=tmp_path / f"fake-vllm-{i}.log",
            env={"POLICY_PORT": str(port), "POLICY_SCRIPTS_DIR": str(EXAMPLES / "scripts")},
            health_url=f"http://127.0.0.1:{port}/health").start())
    try:
        for server in servers:
            server.wait_healthy(60)
        yield [str(s.health_url).removesuffix("/health") for s in servers]
    finally:
        for server in servers:
            server.stop()


def chat_requests(policy_url: str) -> float:
    """Chat completions a policy server answered with 200 (its `policy_requests_total` counter)."""
    metrics = httpx.get(f"{policy_url}/metrics", timeout=5).text
    match = re.search(r'policy_requests_total\{endpoint="chat",status="200"\} ([0-9.e+]+)', metrics)
    return float(match.group(1)) if match else 0.0


def child_environ(parent_pid: int, module: str) -> dict[str, str]:
    """Environment of the child of `parent_pid` running `python -m <module>`."""
    for child in psutil.Process(parent_pid).children():
        if module in child.cmdline():
            return child.environ()
    raise AssertionError(f"no child of {parent_pid} runs {module}")


def cli(producer_url: str, *args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"CUA_PRODUCER": producer_url}, catch_exceptions=False)


def test_up_with_external_redis_and_policy_servers_runs_the_examples(
        redis_url: str, fake_vllms: list[str], s3_endpoint: str, tmp_path: Path) -> None:
    port, gateway_port = free_port(), free_port()
    producer = f"http://127.0.0.1:{port}"
    log = (tmp_path / "up.log").open("wb")
    up = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "up", "--redis-url", redis_url,
         "--policy-url", fake_vllms[0], "--policy-url", fake_vllms[1], "--store-url", "s3://cli-up",
         "--port", str(port), "--gateway-port", str(gateway_port), "--display-base", str(DISPLAY_BASE),
         "--settle", "1", "--envs", "2", "--runners", "2", "--work-dir", str(tmp_path / "stack")],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        env={**os.environ, "S3_ENDPOINT": s3_endpoint, "S3_ACCESS_KEY": "testing", "S3_SECRET_KEY": "testing"})
    try:
        def producer_up() -> bool:
            if up.poll() is not None:
                raise GiveUp(f"up exited {up.returncode}: {(tmp_path / 'up.log').read_text()}")
            return "stack up" in (tmp_path / "up.log").read_text() and http_ok(f"{producer}/healthz")

        wait_until(producer_up, 240, "cua-rollout up to start the stack", interval_s=0.5)
        assert http_ok(f"http://127.0.0.1:{gateway_port}/healthz")
        no_scripted = not list((tmp_path / "stack" / "logs").glob("policy-*.log"))
        assert no_scripted, "up started scripted replicas although --policy-url was given"
        xvfb = subprocess.run(["pgrep", "-a", "Xvfb"], capture_output=True, text=True).stdout
        assert f"Xvfb :{DISPLAY_BASE} " in xvfb, xvfb
        runner_env = child_environ(up.pid, "services.runner")
        assert runner_env["RUNNER_SETTLE_MAX_S"] == "1.0" and runner_env["REDIS_URL"] == redis_url
        gateway_env = child_environ(up.pid, "services.model_gateway")
        assert gateway_env["GATEWAY_REPLICAS"] == ",".join(fake_vllms)

        pool = json.loads(cli(producer, "envs", "--json").stdout)
        assert pool["total"] == 2 and {e["provider"] for e in pool["envs"]} == {"local"}

        # the os examples (one deliberately wrong); every other example runs in test_e2e / test_osworld_e2e
        submitted = cli(producer, "submit", str(EXAMPLES / "tasks" / "os"), "--run-id", "up-examples", "--json")
        assert submitted.exit_code == 0, submitted.stderr
        watched = cli(producer, "watch", "up-examples", "--fail-on-error", "--json", "--timeout", "700")
        run = json.loads(watched.stdout)
        # os-todo-wrong-name's script is deliberately wrong: a finished run with a failure exits 1
        assert watched.exit_code == 1, watched.stderr
        assert "did not succeed" in watched.stderr.strip().splitlines()[-1]
        assert mismatches(run, load_expectations(EXAMPLES / "scripts")) == []
        assert run["total"] == len(list((EXAMPLES / "tasks" / "os").glob("*.json")))
        assert all(chat_requests(url) > 0 for url in fake_vllms), "the gateway did not use both policy servers"

        out = tmp_path / "trajectory"
        shown = cli(producer, "trajectory", "up-examples", "os-hello-file", "0", "--out", str(out), "--json")
        assert shown.exit_code == 0, shown.stderr
        assert json.loads(shown.stdout)["manifest"]["status"] == "completed"
        assert (out / "image_0000.png").read_bytes().startswith(b"\x89PNG")
    finally:
        up.send_signal(signal.SIGTERM)
        code = up.wait(timeout=120)
        log.close()
    assert code == 0, (tmp_path / "up.log").read_text()
    assert not http_ok(f"{producer}/healthz")
    client = redis.Redis.from_url(redis_url)
    assert EnvPool(client).envs() == [], "the stopped stack left its local envs registered in the external Redis"
    client.close()


def test_up_with_an_external_env_runs_a_task_on_it(redis_url: str, tmp_path: Path) -> None:
    """An env started by the test (standing in for an env pod or OSWorld VM) given with `--env-url`:
    `up` starts no desktop of its own and the rollout runs on that env."""
    from services.desktop_env.launcher import LocalEnvLauncher

    port = free_port()
    producer = f"http://127.0.0.1:{port}"
    with LocalEnvLauncher(count=1, root_dir=tmp_path / "external-env") as launcher:
        env_url = launcher.urls[0]
        log = (tmp_path / "up.log").open("wb")
        up = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "up", "--redis-url", redis_url, "--env-url", env_url,
             "--port", str(port), "--runners", "1", "--replicas", "1", "--latency-ms", "5",
             "--work-dir", str(tmp_path / "stack")],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        try:
            def producer_up() -> bool:
                if up.poll() is not None:
                    raise GiveUp(f"up exited {up.returncode}: {(tmp_path / 'up.log').read_text()}")
                return "stack up" in (tmp_path / "up.log").read_text() and http_ok(f"{producer}/healthz")

            wait_until(producer_up, 180, "cua-rollout up to start the stack", interval_s=0.5)
            assert not (tmp_path / "stack" / "envs").exists(), "up started local desktops despite --env-url"
            assert child_environ(up.pid, "services.scripted_policy")["POLICY_LATENCY_MS"] == "5.0"
            assert child_environ(up.pid, "services.runner")["RUNNER_ENV_PROVIDER"] == "static"
            pool = json.loads(cli(producer, "envs", "--json").stdout)
            assert [(e["url"], e["provider"]) for e in pool["envs"]] == [(env_url, "static")]

            task = EXAMPLES / "tasks" / "os" / "os-hello-file.json"
            assert cli(producer, "submit", str(task), "--run-id", "on-external-env").exit_code == 0
            watched = cli(producer, "watch", "on-external-env", "--fail-on-error", "--json", "--timeout", "300")
            assert watched.exit_code == 0, watched.stderr
            rollout = json.loads(watched.stdout)["rollouts"][0]
            assert (rollout["status"], rollout["reward"], rollout["env_id"]) == \
                ("completed", 1.0, pool["envs"][0]["env_id"])
        finally:
            up.send_signal(signal.SIGTERM)
            code = up.wait(timeout=120)
            log.close()
        assert code == 0, (tmp_path / "up.log").read_text()
        assert http_ok(f"{env_url}/healthz"), "up stopped an env it did not start"
