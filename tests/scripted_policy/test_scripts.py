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
    HOLD_REPLY,
    MAX_HOLDS,
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


def frame(color: tuple[int, int, int], box: tuple[int, int, int, int] | None = None) -> bytes:
    """A 1920 x 1080 PNG screenshot of one colour, with `box` (x0, y0, x1, y1) painted white."""
    image = Image.new("RGB", (1920, 1080), color)
    if box is not None:
        image.paste((255, 255, 255), box)
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def play(scripts: list, screens: list[bytes]) -> list[str]:
    """The replies the scripted policy gives a real UI-TARS agent shown `screens`, one per step."""
    agent = make_agent("ui_tars_1_5", {}, INSTRUCTION, (1920, 1080), "pw")
    answered = []
    for png in screens:
        reply = choose_reply(scripts, agent.build_messages(Observation(png)))
        answered.append(reply)
        agent.record(reply)
    return answered


@pytest.fixture()
def menu_script(tmp_path: Path) -> list:
    """A script whose second key waits for the menu its first key opens."""
    replies = ["Thought: open the menu\nAction: hotkey(key='alt i')",
               {"reply": "Thought: pick its item\nAction: press(key='t')", "after_change": True},
               "Thought: done\nAction: finished(content='ok')"]
    (tmp_path / "s.json").write_text(json.dumps({"instruction": INSTRUCTION, "replies": replies}))
    return load_scripts(tmp_path)


def test_a_reply_after_change_is_held_until_the_screen_changes_and_holds_are_no_steps(menu_script: list) -> None:
    desktop, menu = frame((20, 40, 60)), frame((20, 40, 60), (100, 30, 400, 600))
    pointer = frame((20, 40, 60), (900, 500, 913, 521))  # the pointer moved, a caret blinked: no change
    answered = play(menu_script, [desktop, desktop, pointer, menu, menu])
    assert answered == [menu_script[0].replies[0], HOLD_REPLY, HOLD_REPLY, menu_script[0].replies[1],
                        menu_script[0].replies[2]]
    assert make_agent("ui_tars_1_5", {}, INSTRUCTION, (1920, 1080), "pw").parse(HOLD_REPLY).actions[0].action_type \
        == "WAIT"


def test_a_reply_is_held_at_most_max_holds_times_in_a_row(menu_script: list) -> None:
    desktop = frame((20, 40, 60))
    answered = play(menu_script, [desktop] * 8)
    assert answered == [menu_script[0].replies[0], *[HOLD_REPLY] * MAX_HOLDS, menu_script[0].replies[1],
                        menu_script[0].replies[2], AGENT_REPLIES["ui_tars_1_5"][0]]


def test_a_reply_when_drawn_is_held_until_its_box_is_drawn(tmp_path: Path) -> None:
    click = "Thought: click the menu\nAction: click(start_box='(1887,146)')"
    replies = [{"reply": click, "when_drawn": [1500, 120, 1920, 175]}, "Thought: done\nAction: finished(content='ok')"]
    (tmp_path / "s.json").write_text(json.dumps({"instruction": INSTRUCTION, "replies": replies}))
    scripts = load_scripts(tmp_path)
    blank = frame((255, 255, 255))
    image = Image.new("RGB", (1920, 1080), (255, 255, 255))
    for x in range(1500, 1920):
        image.putpixel((x, 150), (x % 256, 0, 255 - x % 256))  # the toolbar drawn: many colours in the box
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    answered = play(scripts, [blank, blank, buffer.getvalue(), blank])
    assert answered == [HOLD_REPLY, HOLD_REPLY, scripts[0].replies[0], scripts[0].replies[1]]


@pytest.mark.parametrize(("script", "error"), [
    ({"replies": [{"reply": 1}]}, "reply 0 must be a string or"),
    ({"replies": [{"reply": "a", "after": True}]}, "reply 0 must be a string or"),
    ({"replies": [{"reply": "a", "after_change": True}]}, "reply 0 cannot wait for a change"),
    ({"replies": ["a", {"reply": "b", "after_change": 1}]}, "reply 1: after_change must be true or false"),
    ({"replies": [{"reply": "a", "when_drawn": [5, 0, 5, 10]}]}, "reply 0: when_drawn must be"),
    ({"replies": [{"reply": "a", "when_drawn": [0, 0, 10]}]}, "reply 0: when_drawn must be"),
    ({"replies": ["a", {"reply": "b", "after_change": True}], "agent": "qwen_vl_computer_use"},
     "need a hold reply in agent 'qwen_vl_computer_use'"),
    ({"replies": ["a", {"reply": "b", "after_change": True}], "hold": "a"}, "hold reply must differ"),
])
def test_invalid_waiting_scripts_are_refused_naming_the_problem(tmp_path: Path, script: dict, error: str) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({"instruction": INSTRUCTION, **script}))
    with pytest.raises(ValueError, match=f"bad.json.*{error}"):
        load_scripts(tmp_path)
