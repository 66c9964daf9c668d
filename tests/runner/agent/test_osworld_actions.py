"""OSWorld prompt agent replies into actions: code blocks, special codes, computer_13 JSON, set-of-marks tags,
the `<` fix, and the clear errors on what cannot run (OSWorld's own parsers: tests/oracle/agents/)."""

from __future__ import annotations

import ast

import pytest

from services.runner.agent.base import ParseError
from services.runner.agent.osworld_actions import (
    CODE_PREFIX,
    computer_13_actions,
    fix_less_than,
    pyautogui_actions,
    tag_variables,
)


def test_code_blocks_become_prefixed_actions_and_special_codes_end_or_wait() -> None:
    actions = pyautogui_actions("I save.\n```python\npyautogui.hotkey('ctrl', 's')\nWAIT\n```\n```DONE```")
    assert [a.action_type for a in actions] == ["pyautogui", "WAIT", "DONE"]
    assert actions[0].code == CODE_PREFIX + "pyautogui.hotkey('ctrl', 's')"
    assert actions[0].inputs == {"code": "pyautogui.hotkey('ctrl', 's')"}
    assert [a.action_type for a in pyautogui_actions(" FAIL ")] == ["FAIL"]
    with pytest.raises(ParseError, match="no ```code``` block"):
        pyautogui_actions("I would click the button.")


def test_semicolons_inside_strings_survive() -> None:
    [action] = pyautogui_actions("```python\npyautogui.typewrite('a;b'); time.sleep(0.5)\n```")
    ast.parse(action.code)  # OSWorld's `;` rewriting would make this a syntax error


def test_less_than_is_typed_with_shift_comma_as_osworld_fixes_it() -> None:
    assert fix_less_than("pyautogui.typewrite('a<b')") == \
        'pyautogui.typewrite(\'a\'); pyautogui.hotkey("shift", ","); pyautogui.typewrite(\'b\')'
    assert fix_less_than("pyautogui.press('<')") == 'pyautogui.hotkey("shift", ",")'
    assert fix_less_than("pyautogui.typewrite('ab')") == "pyautogui.typewrite('ab')"


def test_set_of_marks_tags_are_box_centres_before_the_code() -> None:
    assert tag_variables([[10, 20, 30, 40], [0, 0, 5, 5]]) == "tag_1=(25, 40)\ntag_2=(2, 2)\n"
    [action] = pyautogui_actions("```python\npyautogui.click(tag_1)\n```", boxes=[[10, 20, 30, 40]])
    assert action.code == CODE_PREFIX + "tag_1=(25, 40)\npyautogui.click(tag_1)"


@pytest.mark.parametrize(("reply", "code"), [
    ('{"action_type": "CLICK", "x": 10, "y": 20.5, "button": "right", "num_clicks": 2}',
     "pyautogui.click(button='right', x=10, y=20.5, clicks=2)"),
    ('{"action_type": "CLICK"}', "pyautogui.click()"),
    ('{"action_type": "MOVE_TO", "parameters": {"x": 1, "y": 2}}', "pyautogui.moveTo(1, 2)"),
    ('{"action_type": "DOUBLE_CLICK", "x": 3, "y": 4}', "pyautogui.doubleClick(3, 4)"),
    ('{"action_type": "MOUSE_DOWN", "button": "left"}', "pyautogui.mouseDown(button='left')"),
    ('{"action_type": "DRAG_TO", "x": 5, "y": 6}',
     "pyautogui.dragTo(5, 6, duration=1.0, button='left', mouseDownUp=True)"),
    ('{"action_type": "SCROLL", "dx": 2, "dy": -3}', "pyautogui.hscroll(2)\npyautogui.vscroll(-3)"),
    ('{"action_type": "PRESS", "key": "enter"}', "pyautogui.press('enter')"),
    ('{"action_type": "KEY_UP", "key": "shift"}', "pyautogui.keyUp('shift')"),
    ('{"action_type": "HOTKEY", "keys": ["ctrl", "alt", "t"]}', "pyautogui.hotkey('ctrl', 'alt', 't')"),
])
def test_computer_13_actions_run_as_osworlds_controller_runs_them(reply: str, code: str) -> None:
    [action] = computer_13_actions(f"```json\n{reply}\n```")
    assert action.code == CODE_PREFIX + code
    ast.parse(action.code)


def test_computer_13_typing_goes_through_the_checked_paste_for_what_pyautogui_mistypes() -> None:
    [plain] = computer_13_actions('{"action_type": "TYPING", "text": "hello\\n"}')
    assert plain.code == "import pyautogui\npyautogui.write('hello', interval=0.0)\npyautogui.press('enter')"
    [pasted] = computer_13_actions('{"action_type": "TYPING", "text": "a < b é"}')
    assert "paste_text('a < b é'" in pasted.code


@pytest.mark.parametrize(("reply", "message"), [
    ('{"action_type": "TELEPORT"}', "unknown computer_13 action_type 'TELEPORT'"),
    ('{"action_type": "PRESS", "key": "hyper"}', "key 'hyper' is not one of pyautogui's key names"),
    ('{"action_type": "CLICK", "x": 1}', "needs both x and y"),
    ('{"action_type": "CLICK", "x": "1", "y": 2}', "'x' must be a number"),
    ('{"action_type": "HOTKEY", "keys": "ctrl+c"}', "needs a list of 'keys'"),
    ('{"action_type": "SCROLL"}', "needs dx or dy"),
    ("```json\n{not json}\n```", "not JSON"),
    ('["CLICK"]', "must be an object with an 'action_type'"),
])
def test_computer_13_actions_that_cannot_run_are_parse_errors(reply: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        computer_13_actions(reply)
