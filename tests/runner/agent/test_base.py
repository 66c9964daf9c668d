"""What each agent does with a reply none of whose samples parsed (`Agent.unparseable`) and at the rollout's
last step (`Agent.last_step`): never the model's FAIL (issue 36; UI-TARS in test_ui_tars.py, the official
agents themselves in tests/oracle/agents/)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from services.runner.agent.base import Agent, Observation, ParseError
from services.runner.agent.osworld_prompt import NO_VALID_ACTION, OSWorldPromptAgent, OSWorldPromptOptions
from services.runner.agent.qwen_computer_use import QwenComputerUseAgent

GARBAGE = "Python 4 blorp )) qz7"


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (1920, 1080), (9, 9, 9)).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("agent", [
    OSWorldPromptAgent("Set Python4", (1920, 1080)),
    OSWorldPromptAgent("Set Python4", (1920, 1080), OSWorldPromptOptions(action_space="computer_13")),
    QwenComputerUseAgent("Set Python4", (1920, 1080)),
], ids=["osworld-pyautogui", "osworld-computer_13", "qwen"])
def test_prompt_and_qwen_agents_take_no_action_and_go_on(agent: Agent) -> None:
    agent.build_messages(Observation(png(), "<desktop-frame/>"))
    with pytest.raises(ParseError):
        agent.parse(GARBAGE)
    nothing = agent.unparseable(GARBAGE, "no action in the reply")
    assert nothing.terminal is None and nothing.actions == []
    assert agent.last_step(nothing) is nothing  # no forced FAIL at max_steps either


def test_the_prompt_agents_history_shows_an_unparseable_reply_as_osworld_does() -> None:
    code = OSWorldPromptAgent("Set Python4", (1920, 1080), OSWorldPromptOptions(max_trajectory_length=3))
    json_actions = OSWorldPromptAgent("Set Python4", (1920, 1080), OSWorldPromptOptions(
        action_space="computer_13", max_trajectory_length=3))
    for agent in (code, json_actions):
        agent.build_messages(Observation(png()))
        agent.record(GARBAGE, parsed=False)
    # pyautogui: OSWorld's parser returns no code and keeps the reply; computer_13: its parser raises and the
    # history gets an empty thought, shown as "No valid action"
    assert code.build_messages(Observation(png()))[2]["content"][0]["text"] == GARBAGE
    assert json_actions.build_messages(Observation(png()))[2]["content"][0]["text"] == NO_VALID_ACTION
    fenced = OSWorldPromptAgent("Set Python4", (1920, 1080), OSWorldPromptOptions(action_space="computer_13"))
    fenced.build_messages(Observation(png()))
    fenced.record("```json\n{not json}\n```", parsed=False)  # OSWorld reads the block (and fails later): kept
    assert fenced.build_messages(Observation(png()))[2]["content"][0]["text"] == "```json\n{not json}\n```"
