"""`cua-rollout agents` and `submit --agent/--agent-option`: the catalogue as a table or JSON, options read
as JSON values."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from services.cli.commands.runs import parse_options
from services.cli.main import app


def test_agents_lists_each_agent_with_observations_action_spaces_and_options() -> None:
    shown = CliRunner().invoke(app, ["agents"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.splitlines()[-1] == "agents: ui_tars_1_5, osworld_prompt, qwen_vl_computer_use, external"
    for word in ("screenshot_a11y_tree", "som", "computer_13", "computer_use", "observation_type", "history_n"):
        assert word in shown.stdout
    listed = json.loads(CliRunner().invoke(app, ["agents", "--json"]).stdout)["agents"]
    assert [a["name"] for a in listed] == ["ui_tars_1_5", "osworld_prompt", "qwen_vl_computer_use", "external"]
    assert listed[1]["options"]["action_space"]["enum"] == ["pyautogui", "computer_13"]


def test_agent_options_are_read_as_json_values_else_text() -> None:
    assert parse_options(["observation_type=som", "max_trajectory_length=5", "flag=true"]) == \
        {"observation_type": "som", "max_trajectory_length": 5, "flag": True}
    with pytest.raises(ValueError, match="expected KEY=VALUE"):
        parse_options(["som"])
