"""The Qwen-VL `computer_use` agent: its requests (history window, previous actions), each action's code,
both coordinate conventions, and the clear errors (qwen-agent and qwen-vl-utils themselves:
tests/oracle/agents/test_qwen_computer_use.py)."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from services.runner.agent.base import Observation, ParseError
from services.runner.agent.qwen_computer_use import QwenComputerUseAgent, QwenOptions


def png(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (1920, 1080), (shade, shade, shade)).save(buffer, "PNG")
    return buffer.getvalue()


def call(**arguments: object) -> str:
    return "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": arguments}) + "\n</tool_call>"


def test_requests_keep_the_last_screenshots_and_summarise_older_steps() -> None:
    agent = QwenComputerUseAgent("Rename the folder", (1920, 1080), QwenOptions(history_n=2))
    for step in range(4):
        messages = agent.build_messages(Observation(png(step)))
        agent.record(f"Action: step {step + 1}.\n" + call(action="wait"))
    assert messages[0]["role"] == "system" and "The screen's resolution is 1932x1092." in json.dumps(messages[0])
    roles = [m["role"] for m in messages[1:]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]  # 2 earlier screenshots, then the current
    text = messages[1]["content"][1]["text"]
    assert "Instruction: Rename the folder" in text and "Previous actions:\nStep 1: step 1." in text
    assert messages[2]["content"][0]["text"].startswith("Action: step 2.")
    final = agent.final_messages()
    assert [p["image_url"]["url"] for m in final for p in m["content"] if p["type"] == "image_url"] == \
        [f"image_{i:04d}.png" for i in range(4)]


def test_actions_map_resized_coordinates_to_the_screen() -> None:
    agent = QwenComputerUseAgent("task", (1920, 1080))
    parsed = agent.parse("Action: click the icon.\n" + call(action="left_click", coordinate=[966, 546]))
    assert parsed.thought == "Action: click the icon."
    [click] = parsed.actions
    assert (click.inputs, click.code) == ({"x": 960, "y": 540}, "import pyautogui\npyautogui.click(960, 540)")
    relative = QwenComputerUseAgent("task", (1920, 1080), QwenOptions(coordinates="relative"))
    assert relative.parse(call(action="double_click", coordinate=[500, 999])).actions[0].inputs == {"x": 960, "y": 1079}


def test_huge_coordinates_are_clamped_not_overflowed() -> None:
    agent = QwenComputerUseAgent("task", (1920, 1080))
    huge = agent.parse(call(action="left_click", coordinate=[1e308, 10**400]))
    assert huge.actions[0].inputs == {"x": 1919, "y": 1079}
    assert agent.parse(call(action="left_click", coordinate=[-1e308, 5])).actions[0].inputs == {"x": 0, "y": 5}


@pytest.mark.parametrize(("arguments", "kind", "code"), [
    ({"action": "key", "keys": ["ctrl", "s"]}, "key", "pyautogui.hotkey('ctrl', 's')"),
    ({"action": "key", "keys": ["Return"]}, "key", "pyautogui.press('enter')"),
    ({"action": "scroll", "pixels": -5, "coordinate": [0, 0]}, "scroll",
     "pyautogui.moveTo(0, 0)\npyautogui.scroll(-5)"),
    ({"action": "left_click_drag", "coordinate": [1932, 1092]}, "left_click_drag",
     "pyautogui.dragTo(1919, 1079, duration=0.5, button='left')"),
    ({"action": "right_click"}, "right_click", "pyautogui.rightClick()"),
])
def test_each_action_becomes_pyautogui_code(arguments: dict[str, object], kind: str, code: str) -> None:
    [action] = QwenComputerUseAgent("task", (1920, 1080)).parse(call(**arguments)).actions
    assert action.action_type == kind and action.code == "import pyautogui\n" + code


def test_terminate_failure_is_fail_and_typing_is_safe_for_quotes() -> None:
    agent = QwenComputerUseAgent("task", (1920, 1080))
    assert agent.parse(call(action="terminate", status="failure")).terminal == "FAIL"
    assert agent.parse(call(action="terminate", status="success")).terminal == "DONE"
    assert agent.parse(call(action="wait", time=2)).actions[0].action_type == "WAIT"
    [typed] = agent.parse(call(action="type", text="it's done\n")).actions
    assert typed.code == "import pyautogui\npyautogui.write(\"it's done\", interval=0.0)\npyautogui.press('enter')"


@pytest.mark.parametrize(("reply", "message"), [
    ("I will click.", "no <tool_call>"),
    ("<tool_call>{'name': 'computer_use'}</tool_call>", "not JSON"),
    (call(action="fly"), "unknown computer_use action 'fly'"),
    (call(action="left_click", coordinate=[1]), r"coordinate must be \[x, y\] numbers"),
    (call(action="terminate", status="maybe"), "status must be success or failure"),
    ("<tool_call>\n" + json.dumps({"name": "browser", "arguments": {}}) + "\n</tool_call>", "unknown tool 'browser'"),
])
def test_replies_that_cannot_run_are_parse_errors(reply: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        QwenComputerUseAgent("task", (1920, 1080)).parse(reply)
