"""The agent registry and its catalogue in common/: the same agents and options, the same verdicts on
options, and no runner import in the producer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from common.agents import CATALOGUE, check_agent, known_agents
from services.runner.agent.catalogue import catalogue_text
from services.runner.agent.registry import AGENTS, UnknownAgent, agent_options, make_agent

ROOT = Path(__file__).resolve().parents[3]


def test_catalogue_lists_exactly_the_registered_agents() -> None:
    assert CATALOGUE.read_text() == catalogue_text(), \
        "common/agent_catalogue.json is stale: run `python -m services.runner.agent.catalogue`"
    assert known_agents() == list(AGENTS) == ["ui_tars_1_5", "osworld_prompt", "qwen_vl_computer_use", "external"]


OPTION_CASES: list[tuple[str, dict[str, Any]]] = [
    ("ui_tars_1_5", {}), ("ui_tars_1_5", {"history_images": 3, "language": "Chinese"}),
    ("ui_tars_1_5", {"history_images": 0}), ("ui_tars_1_5", {"history_images": "5"}), ("ui_tars_1_5", {"x": 1}),
    ("ui_tars_1_5", {"language": ""}), ("osworld_prompt", {"observation_type": "som"}),
    ("osworld_prompt", {"action_space": "computer_13", "observation_type": "som"}),
    ("osworld_prompt", {"action_space": "computer_13", "observation_type": "a11y_tree", "max_trajectory_length": 0}),
    ("osworld_prompt", {"a11y_tree_max_tokens": 0}), ("osworld_prompt", {"max_trajectory_length": True}),
    ("qwen_vl_computer_use", {"coordinates": "relative", "history_n": 2}),
    ("qwen_vl_computer_use", {"coordinates": "normalized"}), ("qwen_vl_computer_use", {"history_n": 2.0}),
    ("external", {"command": "agent_s"}), ("external", {"command": "", "timeout_s": 5}),
    ("external", {"timeout_s": 0}), ("external", {"command": "x", "timeout_s": 1.5}),
]


@pytest.mark.parametrize(("agent", "options"), OPTION_CASES)
def test_the_catalogue_and_the_registry_agree_on_options(agent: str, options: dict[str, Any]) -> None:
    try:
        produced = check_agent(agent, options)
    except ValueError:
        with pytest.raises(ValueError):
            agent_options(agent, options)
        return
    assert agent_options(agent, options).model_dump() == produced  # same values, defaults filled in


def test_an_unknown_agent_is_named_with_the_known_ones() -> None:
    with pytest.raises(UnknownAgent,
                       match="unknown agent 'gpt' .known: external, osworld_prompt, qwen_vl_computer_use"):
        make_agent("gpt", {}, "task", (1920, 1080), "password")
    with pytest.raises(ValueError, match="unknown agent 'gpt' .known: ui_tars_1_5, osworld_prompt"):
        check_agent("gpt", {})


def test_the_producer_does_not_import_the_runners_agents() -> None:
    probe = ("import sys, services.task_producer.__main__; "
             "print(sorted(m for m in sys.modules if m.startswith('services.runner') or m == 'tiktoken'))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"  # RQ's import paths are plain strings in common/run.py
