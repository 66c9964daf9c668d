"""`qwen_vl_computer_use` against Qwen's official code: qwen-agent (PyPI `qwen-agent` 0.0.34) builds the
system message and reads the tool calls, `qwen-vl-utils` (0.0.14) sizes the image, and the `computer_use`
schema is the one of Qwen's computer-use cookbook, as OSWorld ships it (`mm_agents/prompts.py`).

Compared: the system message text parts (qwen-agent's `NousFnCallPrompt.preprocess_fncall_messages`); the
tool schema (qwen-agent's `is_tool_schema`, and equal to OSWorld's copy of the cookbook's tool); the tool
calls of a corpus of replies, the example scripts' among them (`postprocess_fncall_messages`), whose
arguments satisfy the schema (jsonschema, as `BaseTool` checks them); `smart_resize` for factors 28
(Qwen2.5-VL) and 32 (Qwen3-VL) with qwen-vl-utils' default token bounds, and the coordinates it maps.
Deviation (services/runner/agent/qwen_tool.py): arguments in JSON5 but not JSON (single quotes, trailing
commas), which qwen-agent reads with `json5.loads`, raise ParseError here.
Episode ends against OSWorld's `Qwen25VLAgent` and `Qwen3VLAgent` (`episode_probe.py`): a reply without a tool
call is no action (ours after its re-samples) and the episode goes on; the last step runs its reply (no FAIL).
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest

from services.runner.agent.base import ParseError
from services.runner.agent.qwen_computer_use import MAX_TOKENS, MIN_TOKENS, QwenComputerUseAgent, QwenOptions
from services.runner.agent.qwen_tool import computer_use_function, system_message, tool_calls
from services.runner.agent.smart_resize import smart_resize
from services.scripted_policy.scripts import load_scripts
from tests.oracle.agents.episodes import kinds, play
from tests.oracle.client import Oracle

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = ROOT / "examples" / "scripts" / "agents" / "qwen_vl_computer_use"


def _call(arguments: dict[str, object], before: str = "Action: do it.\n") -> str:
    return before + "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": arguments}) + "\n</tool_call>"


REPLIES = [
    _call({"action": "left_click", "coordinate": [100, 200]}),
    _call({"action": "key", "keys": ["ctrl", "s"]}, before=""),
    _call({"action": "type", "text": "It's \"quoted\"\nand multi-line"}),
    _call({"action": "scroll", "pixels": -5}),
    _call({"action": "terminate", "status": "failure"}),
    _call({"action": "left_click_drag", "coordinate": [10, 20]}) + "\n" + _call({"action": "wait", "time": 2}, ""),
    '<think>I could call <tool_call>{"name": "x", "arguments": {}}</tool_call> but no.</think>\n'
    + _call({"action": "double_click", "coordinate": [5, 5]}, ""),
    '<tool_call>\n{"name": "computer_use", "arguments": {"action": "mouse_move", "coordinate": [1, 2]}}',  # unclosed
    "I will click the icon.",
    "<tool_call>\n{\"name\": \"computer_use\", \"arguments\": {'action': 'wait'}}\n</tool_call>",  # JSON5
]


def script_replies() -> list[str]:
    return [reply for script in load_scripts(SCRIPTS) for reply in script.replies]


@pytest.mark.parametrize("screen", [(1932, 1092), (1000, 1000)])
def test_system_message_is_qwen_agents(agent_oracle: Oracle, screen: tuple[int, int]) -> None:
    function = computer_use_function(*screen)
    theirs = agent_oracle.call("qwen_probe", "system_texts", function)
    assert theirs.ok and [part["text"] for part in system_message(function)["content"]] == theirs.value


def test_tool_schema_is_the_cookbooks_as_osworld_ships_it(agent_oracle: Oracle) -> None:
    prompt = agent_oracle.send_raw({"module": "mm_agents.prompts", "attr": "JEDI_GROUNDER_SYS_PROMPT"}, "prompt")()
    text = prompt.value.format(width=1932, height=1092)
    tools = text[text.index("<tools>\n") + len("<tools>\n"):text.rindex("</tools>")]
    assert json.loads(tools, strict=False)["function"] == computer_use_function(1932, 1092)


def test_tool_calls_are_read_as_qwen_agent_reads_them(agent_oracle: Oracle) -> None:
    corpus = REPLIES + script_replies()
    assert len(script_replies()) >= 5
    function = computer_use_function(1932, 1092)
    for text in corpus:
        theirs = agent_oracle.call("qwen_probe", "tool_calls", text).value
        try:
            _, ours = tool_calls(text)
        except ParseError:
            # no call at all, or JSON5 that is not JSON (the documented deviation)
            assert theirs == [] or "'" in text, (text, theirs)
            continue
        assert ours == theirs, text
        for call in ours:
            checked = agent_oracle.call("qwen_probe", "check_arguments", function, call["arguments"])
            assert checked.ok and checked.value, (call, checked.error)


@pytest.mark.parametrize("factor", [28, 32])
def test_smart_resize_equals_qwen_vl_utils(agent_oracle: Oracle, factor: int) -> None:
    rnd = random.Random(factor)
    sizes = [(1080, 1920), (720, 1280), (2160, 3840), (768, 1366), (30, 40), (12000, 9000)]
    sizes += [(rnd.randint(20, 8000), rnd.randint(20, 8000)) for _ in range(200)]
    for height, width in sizes:
        theirs = agent_oracle.call("qwen_vl_utils", "smart_resize", height, width, factor)
        bounds = (MIN_TOKENS * factor * factor, MAX_TOKENS * factor * factor)
        if not theirs.ok:  # an aspect ratio above 200
            with pytest.raises(ValueError, match="aspect ratio"):
                smart_resize(height, width, factor, *bounds)
            continue
        assert tuple(theirs.value) == smart_resize(height, width, factor, *bounds), (height, width)


def test_absolute_coordinates_map_through_the_official_resize(agent_oracle: Oracle) -> None:
    height, width = agent_oracle.call("qwen_vl_utils", "smart_resize", 1080, 1920, 28).value
    agent = QwenComputerUseAgent("task", (1920, 1080), QwenOptions())
    assert agent.model_screen == (width, height)
    click = agent.parse(_call({"action": "left_click", "coordinate": [width - 1, height // 2]})).actions[0]
    assert (click.inputs["x"], click.inputs["y"]) == (round((width - 1) * 1920 / width),
                                                      round(height // 2 * 1080 / height))


SCREENSHOT = (Path(__file__).with_name("fixtures") / "mousepad.png").read_bytes()


@pytest.mark.parametrize("version", ["2.5", "3"])
def test_an_unparseable_reply_is_no_action_and_max_steps_no_fail_as_in_osworlds_qwen_agents(
        agent_oracle: Oracle, version: str) -> None:
    replies = [_call({"action": "left_click", "coordinate": [100, 200]}), "I will click the icon.",
               _call({"action": "key", "keys": ["ctrl", "s"]})]
    theirs = agent_oracle.call("episode_probe", "qwen_episode", version, base64.b64encode(SCREENSHOT).decode(),
                               replies, 3)
    assert theirs.ok, theirs.error
    official = [kinds(step) for step in theirs.value["steps"]]
    assert official == [["code"], [], ["code"]]  # no action for the unreadable reply; the last step runs the reply
    options = QwenOptions(coordinates="absolute" if version == "2.5" else "relative")
    assert play(QwenComputerUseAgent("x", (1920, 1080), options), SCREENSHOT, replies, 3) == official
