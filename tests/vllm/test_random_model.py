"""A model that writes nothing readable earns nothing (issue 36): a real vLLM server of the untrained tiny Qwen2
(`scripts/make_tiny_model.py --kind text`: random weights, so random tokens) behind the local stack, OSWorld's
prompt agent with the accessibility tree (the issue's setup), two rollouts of the infeasible os/c288e301. That
task pays only a `FAIL` the model wrote; before issue 36 the runner took "could not read the reply" as `FAIL`
and both rollouts ended `agent_fail` with reward 1.0. Now an unreadable reply is re-sampled, then no action (as
OSWorld's `PromptAgent`), and running out of steps is no `FAIL` either (docs/scoring.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.polling import wait_until
from common.task import load_task_file
from services.cli.stack import LocalStack, StackConfig
from tests.vllm_fixtures import build_model, start_vllm, stop_vllm, wait_healthy

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
PYTHON4 = "c288e301-e626-4b98-a1ab-159dcb162af5"
RANDOM_MODEL = "tiny-qwen2-random"
MAX_STEPS = 3


@pytest.fixture(scope="module")
def random_replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of one vLLM server of the untrained (random-weight) tiny text model."""
    model = build_model(RANDOM_MODEL, "--kind", "text")
    server = start_vllm(model, tmp_path_factory.mktemp("vllm-random-logs"), served_name=RANDOM_MODEL)
    try:
        wait_healthy([server])
        yield server.url
    finally:
        stop_vllm(server)


def test_a_random_model_scores_zero_on_an_infeasible_task(random_replica: str,
                                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    config = StackConfig(work_dir=tmp_path_factory.mktemp("vllm-random-stack"), envs=1, runners=1,
                         scripts_dir=ROOT / "examples" / "scripts", max_infra_retries=1, policy_urls=[random_replica],
                         fixtures_dir=ROOT / "examples" / "fixtures")
    task = load_task_file(ROOT / "examples" / "tasks" / "osworld" / "os" / f"{PYTHON4}.json").to_json_dict()
    with LocalStack(config) as stack, httpx.Client(base_url=stack.producer_url, timeout=30) as client:
        response = client.post("/v1/runs", json={
            "tasks": [task], "run_id": "vllm-random", "rollouts_per_task": 2, "max_steps": MAX_STEPS,
            "agent": "osworld_prompt", "agent_options": {"action_space": "pyautogui", "observation_type": "a11y_tree",
                                                         "a11y_tree_max_tokens": 400},
            "model": RANDOM_MODEL, "sampling": {"temperature": 1.0, "max_tokens": 24}})
        assert response.status_code == 201, response.text

        def finished() -> dict[str, Any] | None:
            run = client.get("/v1/runs/vllm-random").json()
            return run if run["finished"] else None

        run = wait_until(finished, 900, "the random model's run to finish", interval_s=1.0)
        rollouts = run["rollouts"]
        assert len(rollouts) == 2
        for rollout in rollouts:  # scored, and never paid: no FAIL was written
            assert rollout["reward"] == 0.0 and rollout["status"] in ("truncated", "completed"), rollout

        def step(index: int, number: int) -> dict[str, Any] | None:
            got = client.get(f"/v1/trajectories/vllm-random/{PYTHON4}_{index}/step_{number:04d}.json")
            return got.json() if got.status_code == 200 else None

        steps = [wait_until(lambda i=i, n=n: step(i, n), 60, f"step {n} of rollout {i} in the store")
                 for i, rollout in enumerate(rollouts) for n in range(rollout["num_steps"])]
    # not vacuous: the model's replies were unreadable, re-sampled twice, then taken as no action
    unread = [s for s in steps if s["parse_error"]]
    assert unread and all(s["actions"] == [] and len(s["discarded"]) == 2 for s in unread)
