"""A third-party agent from PyPI, unmodified, through the stack: Agent S3 (`gui-agents` 0.3.2) as the `external`
agent on two OSWorld example tasks.

The runner starts `examples/agent_s/run_agent_s.py` (OSWorld's run-script loop around `AgentS3.predict`) with
the env's OSWorld server URL and a gateway session's base URL; Agent S's own OpenAI client calls the session,
the scripted policy (the vLLM stand-in: no GPU here) answers its worker in Agent S's format
(`examples/scripts/agents/agent_s/`), its reflection calls get whatever script matches. Desktops, Redis,
gateway, runners, sink and producer are real. os/e0df059f (rename a directory in a terminal) reaches reward 1;
os/c288e301 (infeasible) ends with `agent.fail()` and scores 1. The trajectories hold every model call with its
token ids and the env's executed actions, and export at the session level with their loss mask.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from common.polling import wait_until
from common.task import load_task_file
from services.cli.main import app, load_expectations
from services.cli.stack import LocalStack, StackConfig

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
OS_TASKS = ROOT / "examples" / "tasks" / "osworld" / "os"
SCRIPTS = ROOT / "examples" / "scripts"
RENAME, PYTHON4 = "e0df059f-28a6-4169-924f-b9623e7184cc", "c288e301-e626-4b98-a1ab-159dcb162af5"
RUN = "agents-external-agent-s"


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalStack, dict[str, Any]]]:
    """The Agent S run on a local stack, once both rollouts finished."""
    program = f"{sys.executable} {ROOT / 'examples' / 'agent_s' / 'run_agent_s.py'}"
    config = StackConfig(work_dir=tmp_path_factory.mktemp("external-stack"), scripts_dir=SCRIPTS, envs=2, runners=2,
                         replicas=1, max_infra_retries=0, fixtures_dir=ROOT / "examples" / "fixtures",
                         extra_env={"RUNNER_EXTERNAL_AGENTS": json.dumps({"agent_s": program})})
    with LocalStack(config) as stack, httpx.Client(base_url=stack.producer_url, timeout=30) as client:
        tasks = [load_task_file(OS_TASKS / f"{t}.json").to_json_dict() for t in (RENAME, PYTHON4)]
        response = client.post("/v1/runs", json={"tasks": tasks, "max_steps": 8, "run_id": RUN, "agent": "external",
                                                 "agent_options": {"command": "agent_s", "timeout_s": 300}})
        assert response.status_code == 201, response.text
        run = wait_until(lambda: (r := client.get(f"/v1/runs/{RUN}").json())["finished"] and r, 420,
                         "the Agent S run to finish", interval_s=1.0)
        yield stack, run


def _file(stack: LocalStack, task_id: str, name: str) -> Any:
    def stored() -> Any:
        response = httpx.get(f"{stack.producer_url}/v1/trajectories/{RUN}/{task_id}_0/{name}", timeout=30)
        return response.json() if response.status_code == 200 else None

    return wait_until(stored, 30, f"{RUN}/{task_id}_0/{name} in the store", interval_s=0.5)


def test_agent_s_reaches_the_scripted_rewards(finished: tuple[LocalStack, dict[str, Any]]) -> None:
    _, run = finished
    expected = load_expectations(SCRIPTS, agent="agent_s")
    got = {r["task_id"]: (r["status"], r["reward"]) for r in run["rollouts"]}
    assert got == {t: (expected[t]["status"], expected[t]["reward"]) for t in (RENAME, PYTHON4)}, \
        [r.get("error") for r in run["rollouts"]]


def test_the_trajectory_joins_every_call_with_the_executed_actions(finished: tuple[LocalStack, dict[str, Any]]) -> None:
    stack, _ = finished
    manifest = _file(stack, RENAME, "manifest.json")
    # Agent S makes several calls per action: its worker's 5 (one per action), and from the second action on
    # its reflection agent's 4, each a call of the session and a step of the trajectory
    assert manifest["agent"] == "external" and manifest["num_steps"] == 9
    steps = [_file(stack, RENAME, name) for name in manifest["steps"]]
    assert sum("(Grounded Action)" in s["response"] for s in steps) == 5
    assert len({s["session_id"] for s in steps}) == 1
    assert all(s["token_ids"] and s["prompt_token_ids"] and s["logprobs"] for s in steps)
    assert [s["step"] for s in steps] == list(range(len(steps)))
    codes = [a["code"] for s in steps for a in s["actions"]]
    assert len(codes) == 4 and "pyautogui.hotkey('ctrl', 'alt', 't')" in codes[0]
    assert "mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2" in codes[2]
    assert all(a["action_type"] == "execute" and a["inputs"]["returncode"] == 0 for s in steps for a in s["actions"])
    worker = [s for s in steps if "agent.hotkey" in s["response"]]
    assert worker and any(a["code"] == codes[0] for a in worker[0]["actions"])  # joined to the call that asked


def test_agent_s_trajectories_export_with_token_ids(finished: tuple[LocalStack, dict[str, Any]],
                                                    tmp_path: Path) -> None:
    stack, _ = finished
    out = tmp_path / "external.jsonl"
    result = CliRunner().invoke(app, ["export", RUN, "--level", "session", "--out", str(out),
                                      "--producer", stack.producer_url])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["task_id"] for r in records} == {RENAME, PYTHON4}
    for record in records:
        assert record["prompt_ids"] and record["response_ids"] and record["rollout_log_probs"]
        assert len(record["response_ids"]) == len(record["response_mask"]) == len(record["rollout_log_probs"])
        assert sum(record["response_mask"]) == sum(e - s for s, e in zip(record["turn_starts"], record["turn_ends"],
                                                                           strict=True))
