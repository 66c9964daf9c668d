"""The runner's HTTP per rollout step: libcurl (what it uses, `common.httpclient` over pycurl) against urllib3
(what it used until 2026-11-26, evening) and httpx (until 2026-11-26, morning), side by side in one process.

A step is three requests: the chat completion (`ModelClient.complete`: a 2 KB message list, the scripted policy
answering at once), the action (`DesktopEnvClient.execute` on the bench's null env) and the screenshot
(`DesktopEnvClient.screenshot`). The urllib3 and httpx sides send the same requests with the same headers and
bodies through one `urllib3.PoolManager` / `httpx.Client` and decode the same answers. The clients alternate in
rounds (so machine load hits all alike); the policy and the null env run in processes of their own. Prints CPU
ms per step of this process (the client's own cost, which is what bounds the runner: bench/pipeline.py) and wall
ms per step.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import urllib3

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gateway_overhead import process  # noqa: E402
from bench.pipeline import start_null_envs  # noqa: E402
from common.env_client import DesktopEnvClient  # noqa: E402
from common.polling import free_port  # noqa: E402
from services.runner.model_client import ModelClient  # noqa: E402

MESSAGES = [{"role": "system", "content": "s" * 1000}, {"role": "user", "content": "u" * 1000}]
ACTION = "import pyautogui; pyautogui.click(100, 200)"


def cpu_s() -> float:
    """User + system CPU seconds of this process (all threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def runner_step(model: ModelClient, env: DesktopEnvClient) -> Callable[[int], None]:
    """One step through the runner's own clients."""
    def step(i: int) -> None:
        model.complete(MESSAGES, "m", {"temperature": 0.0}, f"ep-{i % 8}")
        env.execute(["python3", "-c", ACTION])
        env.screenshot()
    return step


def urllib3_step(pool: urllib3.PoolManager, gateway: str, env_url: str) -> Callable[[int], None]:
    """The same step's requests and decoding through one `urllib3.PoolManager` (no retries, as the runner had)."""
    def step(i: int) -> None:
        reply = pool.request("POST", f"{gateway}/v1/chat/completions",
                             json={"model": "m", "messages": MESSAGES, "temperature": 0.0},
                             headers={"X-Episode-Id": f"ep-{i % 8}", "X-Request-Timeout-S": "270.000"},
                             timeout=urllib3.Timeout(connect=5, read=300), redirect=False)
        assert reply.status == 200
        json.loads(reply.data)["choices"][0]["message"]["content"]
        result = pool.request("POST", f"{env_url}/execute", json={"command": ["python3", "-c", ACTION], "shell": False},
                              timeout=urllib3.Timeout(connect=5, read=135), redirect=False)
        assert result.status == 200 and json.loads(result.data)["status"] == "success"
        shot = pool.request("GET", f"{env_url}/screenshot", timeout=urllib3.Timeout(connect=5, read=30), redirect=False)
        assert shot.status == 200 and shot.data
    return step


def httpx_step(client: httpx.Client, gateway: str, env_url: str) -> Callable[[int], None]:
    """The same step's requests and decoding through one `httpx.Client`."""
    def step(i: int) -> None:
        reply = client.post(f"{gateway}/v1/chat/completions",
                            json={"model": "m", "messages": MESSAGES, "temperature": 0.0},
                            headers={"X-Episode-Id": f"ep-{i % 8}", "X-Request-Timeout-S": "270.000"}, timeout=300)
        assert reply.status_code == 200
        reply.json()["choices"][0]["message"]["content"]
        result = client.post(f"{env_url}/execute", json={"command": ["python3", "-c", ACTION], "shell": False},
                             timeout=135)
        assert result.is_success and result.json()["status"] == "success"
        shot = client.get(f"{env_url}/screenshot", timeout=30)
        assert shot.is_success and shot.content
    return step


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="steps per round and client")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    scripts = Path(tempfile.mkdtemp(prefix="runner-http-"))
    (scripts / "s.json").write_text(json.dumps({"instruction": "bench", "replies": ["Action: wait()"]}))
    null_env, (env_url,) = start_null_envs(1)
    port = free_port()
    policy = f"http://127.0.0.1:{port}"
    try:
        with process([sys.executable, "-m", "services.scripted_policy"],
                     {"POLICY_PORT": str(port), "POLICY_SCRIPTS_DIR": str(scripts), "LOG_LEVEL": "WARNING"},
                     f"{policy}/health", scripts / "policy.log"):
            model = ModelClient(policy, timeout_s=300, connect_timeout_s=5)
            env = DesktopEnvClient(env_url)
            steps = {"libcurl": runner_step(model, env),
                     "urllib3": urllib3_step(urllib3.PoolManager(maxsize=4, retries=False), policy, env_url),
                     "httpx": httpx_step(httpx.Client(), policy, env_url)}
            cpu = dict.fromkeys(steps, 0.0)
            wall = dict.fromkeys(steps, 0.0)
            for step in steps.values():
                for i in range(20):  # warm-up: connections, caches
                    step(i)
            for _ in range(args.rounds):
                for name, step in steps.items():
                    c0, t0 = cpu_s(), time.perf_counter()
                    for i in range(args.steps):
                        step(i)
                    cpu[name] += cpu_s() - c0
                    wall[name] += time.perf_counter() - t0
    finally:
        null_env.terminate()
        null_env.wait(10)
    n = args.steps * args.rounds
    print(f"{n} steps per client (3 requests each), interleaved in {args.rounds} rounds")
    print(f"{'client':8} {'CPU ms/step':>12} {'wall ms/step':>13}")
    for name in steps:
        print(f"{name:8} {1000 * cpu[name] / n:12.3f} {1000 * wall[name] / n:13.3f}")
    for other in ("urllib3", "httpx"):
        print(f"libcurl/{other}: CPU {cpu['libcurl'] / cpu[other]:.2f}x, wall {wall['libcurl'] / wall[other]:.2f}x")


if __name__ == "__main__":
    main()
