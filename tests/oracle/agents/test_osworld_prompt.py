"""`osworld_prompt` against OSWorld's own prompt agent (`mm_agents` of PyPI `desktop-env` 1.0.2).

- Whole episodes: OSWorld's `PromptAgent.predict`, its model call answered from a script, beside our agent
  on the same observations (a real screenshot and accessibility tree of our env with mousepad open,
  `fixtures/`): every request's messages are equal (set-of-marks images compared pixel by pixel: the two
  environments' Pillow builds encode PNGs differently), for each observation type with `pyautogui`,
  over more steps than `max_trajectory_length`, and the actions of each reply agree.
- System prompts of every observation type and action space; the parsers (`parse_code_from_string`,
  `parse_actions_from_string`) on a corpus of replies; the tree's linearisation, GPT-4 token trimming and
  set of marks on the real tree and on a made-up one with every edge the filter has.
- Unparseable replies in an episode: no action, the episode goes on, the reply stays in the history as
  OSWorld keeps it (the requests after it are equal).
Deviations (documented in `services/runner/agent/osworld_actions.py` and `osworld_prompts.py`): replies
without a code block raise ParseError here and are re-sampled (OSWorld returns no action at once; after
its re-samples ours does too); `;` is not rewritten; the `computer_13` prompts are not `str.format`ted
(OSWorld's `PromptAgent` raises KeyError on them).
"""

from __future__ import annotations

import ast
import base64
import io
import itertools
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from services.runner.agent import a11y
from services.runner.agent.base import Observation, ParseError
from services.runner.agent.osworld_actions import CODE_PREFIX, KEYBOARD_KEYS, code_blocks, computer_13_dicts
from services.runner.agent.osworld_prompt import OSWorldPromptAgent, OSWorldPromptOptions
from services.runner.agent.osworld_prompts import system_prompt
from tests.oracle.agents.episodes import kinds
from tests.oracle.client import Oracle

FIXTURES = Path(__file__).with_name("fixtures")
TREE = (FIXTURES / "mousepad_tree.xml").read_text()
SCREENSHOT = (FIXTURES / "mousepad.png").read_bytes()
INSTRUCTION = 'Add "butter" to the shopping list in notes.txt and save it.'
REPLIES = [
    "The list is open in mousepad. I click at the end of the text.\n```python\npyautogui.click(900, 700)\n```",
    "```python\npyautogui.hotkey('ctrl', 'end'); time.sleep(0.5)\npyautogui.typewrite('- butter\\n')\n```",
    "I wait for the editor.\n```WAIT```",
    "Saving now.\n```python\npyautogui.hotkey('ctrl', 's')\n```\n```WAIT```",
    "```python\npyautogui.click(tag_1)\n```",
    "The list is saved.\n```DONE```",
]
CODE_REPLIES = REPLIES + [
    "```\npyautogui.press('enter')\nDONE\n```", "FAIL", "  WAIT  ", "no code here at all", "```FAIL```",
    "```python\nimport time\nfor i in range(3):\n    pyautogui.press('down')\n    time.sleep(0.1)\n```",
    "Two blocks.\n```python\npyautogui.click(10, 10)\n```\nthen\n```python\npyautogui.typewrite('a<b')\n```",
    "```python\npyautogui.press('<')\n```", "```bash\nls\n```",
]
JSON_REPLIES = [
    '```json\n{"action_type": "CLICK", "x": 10, "y": 20}\n```', '```\n{"action_type": "TYPING", "text": "hi"}\n```',
    '{"action_type": "HOTKEY", "keys": ["ctrl", "s"]}', "DONE", " FAIL ",
    '```json\n{"action_type": "MOVE_TO", "parameters": {"x": 1, "y": 2}}\n```\n```json\n{"action_type": "DONE"}\n```',
    "```json\n{not json}\n```", "nothing", '```json\n{"action_type": "WAIT"}\n```',
]
EDGE_TREE = (FIXTURES / "edge_tree.xml").read_text()  # every edge of the filter: states, sizes, quotes, roles


def _png_pixels(data_url: str) -> Any:
    with Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))) as image:
        return image.size, image.convert("RGB").tobytes()


def _same_messages(theirs: list[dict[str, Any]], ours: list[dict[str, Any]]) -> None:
    assert len(theirs) == len(ours)
    for i, (a, b) in enumerate(zip(theirs, ours, strict=True)):
        assert a["role"] == b["role"], i
        assert len(a["content"]) == len(b["content"]), i
        for part_a, part_b in zip(a["content"], b["content"], strict=True):
            if part_a["type"] == "image_url":
                assert part_a["image_url"]["detail"] == part_b["image_url"]["detail"]
                url_a, url_b = part_a["image_url"]["url"], part_b["image_url"]["url"]
                assert url_a == url_b or _png_pixels(url_a) == _png_pixels(url_b), f"message {i}: image differs"
            else:
                assert part_a == part_b, f"message {i}"


def _code_equal(theirs: str, ours: str) -> bool:
    """Same code, `;`-separated statements and new lines alike (OSWorld rewrites `;` into new lines)."""
    try:
        return ast.dump(ast.parse(theirs)) == ast.dump(ast.parse(ours))
    except SyntaxError:
        return theirs == ours


@pytest.mark.parametrize("observation_type", ["screenshot", "a11y_tree", "screenshot_a11y_tree", "som"])
def test_episode_requests_equal_osworlds_prompt_agent(agent_oracle: Oracle, observation_type: str) -> None:
    options = {"action_space": "pyautogui", "observation_type": observation_type, "max_trajectory_length": 2,
               "a11y_tree_max_tokens": 60}
    steps = [{"screenshot": base64.b64encode(SCREENSHOT).decode(), "accessibility_tree": TREE, "reply": reply}
             for reply in REPLIES]
    reply = agent_oracle.send_raw({"episode": {"options": {**options, "client_password": "s3cret"},
                                               "instruction": INSTRUCTION, "steps": steps}}, "PromptAgent")()
    assert reply.ok, reply.error
    agent = OSWorldPromptAgent(INSTRUCTION, (1920, 1080), OSWorldPromptOptions(**options), client_password="s3cret")
    for step, (theirs, text) in enumerate(zip(reply.value, REPLIES, strict=True)):
        assert "error" not in theirs, theirs
        tree = None if observation_type == "screenshot" else TREE
        _same_messages(theirs["messages"], agent.build_messages(Observation(SCREENSHOT, tree)))
        actions = agent.parse(text).actions
        agent.record(text)
        assert len(actions) == len(theirs["actions"]), step
        for mine, official in zip(actions, theirs["actions"], strict=True):
            if official in ("WAIT", "DONE", "FAIL"):
                assert mine.action_type == official
            else:
                assert mine.code.startswith(CODE_PREFIX)
                assert _code_equal(official, mine.code[len(CODE_PREFIX):]), (official, mine.code)


@pytest.mark.parametrize(("observation_type", "action_space"), [
    (o, a) for o, a in itertools.product(["screenshot", "a11y_tree", "screenshot_a11y_tree", "som"],
                                         ["pyautogui", "computer_13"]) if (o, a) != ("som", "computer_13")])
def test_system_prompts_are_osworlds(agent_oracle: Oracle, observation_type: str, action_space: str) -> None:
    names = {"screenshot": "SCREENSHOT", "a11y_tree": "A11Y", "screenshot_a11y_tree": "BOTH", "som": "SOM"}
    kind = "TAG" if observation_type == "som" else "CODE" if action_space == "pyautogui" else "ACTION"
    theirs = agent_oracle.send_raw({"module": "mm_agents.prompts",
                                    "attr": f"SYS_PROMPT_IN_{names[observation_type]}_OUT_{kind}"}, "prompt")()
    expected = theirs.value.replace("{CLIENT_PASSWORD}", "pw")  # OSWorld's str.format, for the prompts it works on
    assert system_prompt(observation_type, action_space, "pw") == expected


def test_code_replies_parse_as_osworlds_parse_code_from_string(agent_oracle: Oracle) -> None:
    for text in CODE_REPLIES:
        theirs = agent_oracle.call("mm_agents.agent", "parse_code_from_string", text).value
        ours = code_blocks(text)
        if not theirs:
            assert ours == [], text  # ours then raises ParseError: re-sampled, then no action (documented)
            continue
        assert len(theirs) == len(ours) and all(_code_equal(a, b) for a, b in zip(theirs, ours, strict=True)), \
            (text, theirs, ours)


def test_json_replies_parse_as_osworlds_parse_actions_from_string(agent_oracle: Oracle) -> None:
    for text in JSON_REPLIES:
        theirs = agent_oracle.call("mm_agents.agent", "parse_actions_from_string", text)
        if not theirs.ok or isinstance(theirs.value, str):  # OSWorld raises, or returns its error text
            with pytest.raises(ParseError):
                computer_13_dicts(text)
            continue
        assert computer_13_dicts(text) == theirs.value, text


@pytest.mark.parametrize("tree", [TREE, EDGE_TREE], ids=["mousepad", "edges"])
def test_linearised_tree_and_set_of_marks_are_osworlds(agent_oracle: Oracle, tree: str) -> None:
    theirs = agent_oracle.call("mm_agents.agent", "linearize_accessibility_tree", tree, "ubuntu")
    assert theirs.ok and a11y.linearize(tree) == theirs.value
    assert a11y.linearize(tree).count("\n") >= (6 if tree is TREE else 5)  # not vacuous
    for tokens in (5, 40, 100000):
        trimmed = agent_oracle.call("mm_agents.agent", "trim_accessibility_tree", theirs.value, tokens)
        assert a11y.trim(theirs.value, tokens) == trimmed.value
    screenshot = SCREENSHOT if tree is TREE else _busy_png()
    tagged = agent_oracle.call("som_probe", "tag", base64.b64encode(screenshot).decode(), tree)
    assert tagged.ok, tagged.error
    ours = a11y.tag_screenshot(screenshot, tree)
    assert ours.boxes == tagged.value["marks"] and ours.table == tagged.value["table"]
    assert _png_pixels("x," + base64.b64encode(ours.png).decode()) == _png_pixels("x," + tagged.value["png"])


def _busy_png() -> bytes:
    image = Image.new("RGB", (1920, 1080), (255, 255, 255))
    for x in range(0, 1920, 7):
        for y in range(0, 1080, 5):
            image.putpixel((x, y), (x % 256, y % 256, 90))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def test_key_names_are_osworlds(agent_oracle: Oracle) -> None:
    theirs = agent_oracle.send_raw({"module": "desktop_env.actions", "attr": "KEYBOARD_KEYS"}, "keys")()
    assert KEYBOARD_KEYS == frozenset(theirs.value)


@pytest.mark.parametrize("observation_type", ["screenshot", "a11y_tree"])
def test_an_unparseable_reply_is_no_action_and_stays_in_the_history_as_in_osworld(
        agent_oracle: Oracle, observation_type: str) -> None:
    replies = [REPLIES[0], "no code here at all", REPLIES[1], "Python 4 blorp )) qz7", REPLIES[3]]
    options = {"action_space": "pyautogui", "observation_type": observation_type, "max_trajectory_length": 3,
               "a11y_tree_max_tokens": 60}
    steps = [{"screenshot": base64.b64encode(SCREENSHOT).decode(), "accessibility_tree": TREE, "reply": reply}
             for reply in replies]
    reply = agent_oracle.send_raw({"episode": {"options": {**options, "client_password": "pw"},
                                               "instruction": INSTRUCTION, "steps": steps}}, "PromptAgent")()
    assert reply.ok, reply.error
    agent = OSWorldPromptAgent(INSTRUCTION, (1920, 1080), OSWorldPromptOptions(**options), client_password="pw")
    tree = None if observation_type == "screenshot" else TREE
    for theirs, text in zip(reply.value, replies, strict=True):
        assert "error" not in theirs, theirs
        _same_messages(theirs["messages"], agent.build_messages(Observation(SCREENSHOT, tree)))
        try:
            parsed = agent.parse(text)
        except ParseError as exc:
            parsed = agent.unparseable(text, str(exc))
            agent.record(text, parsed=False)
        else:
            agent.record(text)
        assert kinds([a.action_type if a.action_type in ("WAIT", "DONE", "FAIL") else "code"
                      for a in parsed.actions]) == kinds(theirs["actions"]), text
        assert agent.last_step(parsed) is parsed  # OSWorld's PromptAgent has no max-steps rule
    assert [kinds(t["actions"]) for t in reply.value][1::2] == [[], []]  # the two unreadable replies: no action
