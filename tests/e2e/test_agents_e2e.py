"""Every built-in agent, end to end on the real stack: OSWorld example tasks reach their scripted reward.

The scripted policy (the vLLM stand-in: no GPU here) answers each agent's requests from its scripts in
that agent's own format (`examples/scripts/agents/<agent>/<task id>.json`, picked by the script's `agent`
field among the scripts sharing an instruction); UI-TARS' are `tests/e2e/test_osworld.py`'s. Desktops,
accessibility trees, Redis, gateway, runners and sink are real. Runs:

- `osworld_prompt`, `pyautogui` code with the screenshot and accessibility tree: os/e0df059f (rename a
  directory in a terminal) and os/c288e301 (infeasible: `FAIL` scores 1);
- `osworld_prompt`, `computer_13` JSON actions with the accessibility tree alone: os/4783cc41 (infeasible);
- `qwen_vl_computer_use`: os/e0df059f, and os/c288e301 whose first reply has no tool call: it is sampled
  again at the temperature floor, then the step takes no action and the episode goes on (as OSWorld's Qwen
  agents); the model's own `terminate(failure)` at step 1 is `FAIL` and the infeasible task scores 1;
- the random-model case (issue 36): every agent answered with a reply none can parse (the run's `model`
  selects the garbage script) on the infeasible os/c288e301: UI-TARS ends as `DONE` (`parse_error`), the
  prompt agent (`a11y_tree`) and Qwen take no action until `max_steps` (`truncated`); all score 0.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.polling import wait_until
from common.task import load_task_file
from services.cli.audit import GARBAGE_REPLY
from services.cli.main import load_expectations
from services.cli.stack import LocalStack, StackConfig

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
OS_TASKS = ROOT / "examples" / "tasks" / "osworld" / "os"
SCRIPTS = ROOT / "examples" / "scripts"
RENAME, PYTHON4, COPY_TREE = ("e0df059f-28a6-4169-924f-b9623e7184cc", "c288e301-e626-4b98-a1ab-159dcb162af5",
                              "4783cc41-c03c-4e1b-89b4-50658f642bd5")
RUNS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "agents-osworld-code": ("osworld_prompt", {"action_space": "pyautogui", "observation_type": "screenshot_a11y_tree"},
                            [RENAME, PYTHON4]),
    "agents-osworld-c13": ("osworld_prompt", {"action_space": "computer_13", "observation_type": "a11y_tree"},
                           [COPY_TREE]),
    "agents-qwen": ("qwen_vl_computer_use", {}, [RENAME, PYTHON4]),
}
#: The random model: a reply no agent parses, for requests naming this model (a script's `model`).
GARBAGE_MODEL = "random-garbage"
GARBAGE_STEPS = 2
GARBAGE_RUNS: dict[str, tuple[str, dict[str, Any]]] = {
    "garbage-ui-tars": ("ui_tars_1_5", {}),
    "garbage-osworld": ("osworld_prompt", {"action_space": "pyautogui", "observation_type": "a11y_tree"}),
    "garbage-qwen": ("qwen_vl_computer_use", {}),
}


@pytest.fixture(scope="module")
def finished_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, dict[str, Any]]]:
    """The runs, submitted together to one local stack, once every rollout has finished."""
    scripts = tmp_path_factory.mktemp("agents-scripts")
    shutil.copytree(SCRIPTS, scripts, dirs_exist_ok=True)
    (scripts / "random-garbage.json").write_text(json.dumps({"instruction": "", "model": GARBAGE_MODEL,
                                                             "replies": [GARBAGE_REPLY] * GARBAGE_STEPS}))
    config = StackConfig(work_dir=tmp_path_factory.mktemp("agents-stack"), scripts_dir=scripts, envs=2, runners=2,
                         replicas=1, max_infra_retries=1, fixtures_dir=ROOT / "examples" / "fixtures")
    python4 = load_task_file(OS_TASKS / f"{PYTHON4}.json").to_json_dict()
    with LocalStack(config) as stack, httpx.Client(base_url=stack.producer_url, timeout=30) as client:
        for run_id, (agent, options, task_ids) in RUNS.items():
            tasks = [load_task_file(OS_TASKS / f"{t}.json").to_json_dict() for t in task_ids]
            response = client.post("/v1/runs", json={"tasks": tasks, "max_steps": 8, "run_id": run_id,
                                                     "agent": agent, "agent_options": options})
            assert response.status_code == 201, response.text
        for run_id, (agent, options) in GARBAGE_RUNS.items():
            response = client.post("/v1/runs", json={"tasks": [python4], "max_steps": GARBAGE_STEPS, "run_id": run_id,
                                                     "agent": agent, "agent_options": options, "model": GARBAGE_MODEL})
            assert response.status_code == 201, response.text

        def all_finished() -> dict[str, Any] | None:
            runs = {run_id: client.get(f"/v1/runs/{run_id}").json() for run_id in [*RUNS, *GARBAGE_RUNS]}
            return runs if all(run["finished"] for run in runs.values()) else None

        yield client, wait_until(all_finished, 420, "the agents' runs to finish", interval_s=1.0)


@pytest.mark.parametrize("run_id", list(RUNS))
def test_each_agent_reaches_the_scripted_rewards(finished_runs: tuple[httpx.Client, dict[str, Any]],
                                                 run_id: str) -> None:
    _, runs = finished_runs
    agent = RUNS[run_id][0]
    expected = load_expectations(SCRIPTS, agent=agent)
    got = {r["task_id"]: (r["status"], r["reward"]) for r in runs[run_id]["rollouts"]}
    want = {t: (expected[t]["status"], expected[t]["reward"]) for t in RUNS[run_id][2]}
    assert got == want, [r.get("error") for r in runs[run_id]["rollouts"]]


def _file(client: httpx.Client, run_id: str, task_id: str, name: str) -> Any:
    def stored() -> Any:
        response = client.get(f"/v1/trajectories/{run_id}/{task_id}_0/{name}")
        return response.json() if response.status_code == 200 else None

    return wait_until(stored, 30, f"{run_id}/{task_id}_0/{name} in the store", interval_s=0.5)


def test_an_unparseable_reply_is_resampled_then_no_action_and_only_the_models_own_fail_pays(
        finished_runs: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, runs = finished_runs
    [rollout] = [r for r in runs["agents-qwen"]["rollouts"] if r["task_id"] == PYTHON4]
    assert (rollout["status"], rollout["reward"], rollout["num_steps"]) == ("agent_fail", 1.0, 2)
    step = _file(client, "agents-qwen", PYTHON4, "step_0000.json")
    assert step["parse_error"] == "reply has no <tool_call>"
    assert step["actions"] == [] and step["execution"]["returncode"] == 0  # no action: the episode went on
    last = _file(client, "agents-qwen", PYTHON4, "step_0001.json")
    assert last["parse_error"] is None and last["actions"][0]["action_type"] == "FAIL"
    assert [d["temperature"] for d in step["discarded"]] == [0.0, 0.7]  # the run samples at 0, re-samples at 0.7
    assert all(d["response"] == step["response"] and d["token_ids"] for d in step["discarded"])
    manifest = _file(client, "agents-qwen", PYTHON4, "manifest.json")
    assert manifest["agent"] == "qwen_vl_computer_use" and manifest["agent_options"]["coordinates"] == "absolute"


def test_osworld_prompt_sends_the_linearised_accessibility_tree(
        finished_runs: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = finished_runs
    messages = _file(client, "agents-osworld-code", RENAME, "final_messages.json")
    assert messages[0]["role"] == "system" and "You are asked to complete the following task: I have a directory" \
        in messages[0]["content"][0]["text"]
    first = messages[1]["content"]
    assert first[0]["text"].startswith("Given the screenshot and info from accessibility tree as below:\n"
                                       "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)")
    assert first[1]["image_url"]["url"] == "image_0000.png"
    step = _file(client, "agents-osworld-code", RENAME, "step_0002.json")
    assert step["actions"][0]["action_type"] == "pyautogui" and step["execution"]["returncode"] == 0
    c13 = _file(client, "agents-osworld-c13", COPY_TREE, "step_0000.json")
    assert c13["actions"][0]["action_type"] == "HOTKEY" and "hotkey('ctrl', 'alt', 't')" in c13["actions"][0]["code"]
    assert json.dumps(_file(client, "agents-osworld-c13", COPY_TREE, "final_messages.json")).count("image_") == 0


@pytest.mark.parametrize("run_id", list(GARBAGE_RUNS))
def test_a_model_writing_garbage_scores_zero_on_an_infeasible_task(
        finished_runs: tuple[httpx.Client, dict[str, Any]], run_id: str) -> None:
    client, runs = finished_runs
    [rollout] = runs[run_id]["rollouts"]
    ends_at_once = GARBAGE_RUNS[run_id][0] == "ui_tars_1_5"
    want = ("parse_error", 0.0, 1) if ends_at_once else ("truncated", 0.0, GARBAGE_STEPS)
    assert (rollout["status"], rollout["reward"], rollout["num_steps"]) == want, rollout.get("error")
    assert "unparseable" in rollout["error"]
    for index in range(want[2]):
        step = _file(client, run_id, PYTHON4, f"step_{index:04d}.json")
        assert step["response"] == GARBAGE_REPLY and step["parse_error"] and len(step["discarded"]) == 2
        assert [a["action_type"] for a in step["actions"]] == (["DONE"] if ends_at_once else [])
    evaluation = _file(client, run_id, PYTHON4, "evaluation.json")
    assert evaluation["last_action"] == ("DONE" if ends_at_once else None)
