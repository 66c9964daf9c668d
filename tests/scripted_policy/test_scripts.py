"""The scripted policy's choice of script and step for each agent's requests (no HTTP): scripts naming an
agent answer only that agent's requests, and agents that send only their last replies still get the
right step. The markers are checked against the runner's real agents' requests."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from common.agents import known_agents
from services.runner.agent.base import Observation
from services.runner.agent.registry import make_agent
from services.scripted_policy.scripts import (
    AGENT_MARKERS,
    AGENT_REPLIES,
    agent_of,
    choose_reply,
    load_scripts,
    request_text,
)

INSTRUCTION = "Rename the folder"
TREE = "<desktop-frame></desktop-frame>"


def screenshot() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (1920, 1080), (20, 40, 60)).save(buffer, "PNG")
    return buffer.getvalue()


#: The agents of the runner's step loop (`external` runs a program of its own).
STEP_LOOP_AGENTS = [agent for agent in known_agents() if agent != "external"]


@pytest.mark.parametrize("agent", STEP_LOOP_AGENTS)
def test_every_agent_has_a_marker_its_requests_carry_and_replies_it_parses(agent: str) -> None:
    runner_agent = make_agent(agent, {}, INSTRUCTION, (1920, 1080), "password")
    messages = runner_agent.build_messages(Observation(screenshot(), TREE))
    assert agent_of(request_text(messages)) == agent and AGENT_MARKERS[agent] in request_text(messages)
    done, fail = AGENT_REPLIES[agent]
    assert runner_agent.parse(done).terminal == "DONE" and runner_agent.parse(fail).terminal == "FAIL"


def test_a_script_naming_an_agent_answers_only_that_agents_requests(tmp_path: Path) -> None:
    (tmp_path / "any.json").write_text(json.dumps({"instruction": INSTRUCTION, "replies": ["generic"]}))
    (tmp_path / "qwen.json").write_text(json.dumps({"instruction": INSTRUCTION, "replies": ["qwen"],
                                                    "agent": "qwen_vl_computer_use"}))
    (tmp_path / "osworld.json").write_text(json.dumps({"instruction": INSTRUCTION, "replies": ["osworld"],
                                                       "agent": "osworld_prompt"}))
    scripts = load_scripts(tmp_path)
    replies = {agent: choose_reply(scripts, make_agent(agent, {}, INSTRUCTION, (1920, 1080), "pw")
                                   .build_messages(Observation(screenshot(), TREE))) for agent in STEP_LOOP_AGENTS}
    assert replies == {"ui_tars_1_5": "generic", "osworld_prompt": "osworld", "qwen_vl_computer_use": "qwen"}
    (tmp_path / "bad.json").write_text(json.dumps({"instruction": "x", "replies": [], "agent": "nobody"}))
    with pytest.raises(ValueError, match="bad.json.*unknown agent 'nobody'"):
        load_scripts(tmp_path)


def test_the_step_of_an_agent_that_sends_only_its_last_replies(tmp_path: Path) -> None:
    replies = ["```python\npyautogui.press('a')\n```", "```WAIT```", "```python\npyautogui.press('b')\n```",
               "```WAIT```", "```DONE```"]
    (tmp_path / "s.json").write_text(json.dumps({"instruction": INSTRUCTION, "replies": replies,
                                                 "agent": "osworld_prompt"}))
    scripts = load_scripts(tmp_path)
    agent = make_agent("osworld_prompt", {"max_trajectory_length": 2}, INSTRUCTION, (1920, 1080), "pw")
    answered = []
    for _ in range(6):
        reply = choose_reply(scripts, agent.build_messages(Observation(screenshot())))
        answered.append(reply)
        agent.record(reply)
    assert answered == [*replies, AGENT_REPLIES["osworld_prompt"][0]]  # then the agent's own DONE


def test_agent_s_workers_prompt_carries_its_marker_and_its_replies_are_its_actions() -> None:
    from gui_agents.s3.agents.grounding import OSWorldACI
    from gui_agents.s3.memory.procedural_memory import PROCEDURAL_MEMORY
    from gui_agents.s3.utils.common_utils import parse_code_from_string

    prompt = PROCEDURAL_MEMORY.construct_simple_worker_procedural_memory(OSWorldACI, skipped_actions=[])
    assert agent_of(prompt.replace("TASK_DESCRIPTION", INSTRUCTION)) == "agent_s"
    done, fail = AGENT_REPLIES["agent_s"]
    assert (parse_code_from_string(done).strip(), parse_code_from_string(fail).strip()) == \
        ("agent.done()", "agent.fail()")
