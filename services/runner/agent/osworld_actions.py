"""Replies of OSWorld's prompt agent into actions: `pyautogui` code blocks, `computer_13` JSON actions,
set-of-marks tags, and the special codes `WAIT` / `DONE` / `FAIL`.

Our implementation of OSWorld's `mm_agents/agent.py` (`parse_code_from_string`,
`parse_actions_from_string`, `parse_code_from_som_string`) and of how OSWorld runs the actions
(`desktop_env/desktop_env.py` `step`: `pyautogui` code behind `import pyautogui; import time;
pyautogui.FAILSAFE = False; `, with `_fix_pyautogui_less_than_bug`; `desktop_env/controllers/python.py`
`execute_action` for `computer_13`). Differential suite: `tests/oracle/agents/test_osworld_prompt.py`.

Deviations, each where OSWorld's code misbehaves (desktop-env 1.0.2):
- a reply with no code block (or no JSON action) raises `ParseError`: the step loop re-samples it (OSWorld
  does not), and when no sample parses the step takes no action and the episode goes on, as in OSWorld's
  `PromptAgent` for `pyautogui` (`Agent.unparseable`); for `computer_13` JSON that does not parse OSWorld
  returns an error *string* whose characters `lib_run_single` then runs as actions (its episode crashes);
- `;` is not rewritten into a new line: OSWorld splits the reply on every `;`, which breaks code whose
  strings contain one (`typewrite('a;b')` becomes a syntax error); Python runs `a; b` as `a` then `b`;
- `computer_13`: an action with an unknown type, missing or ill-typed parameters, or a key pyautogui does
  not know raises `ParseError` (OSWorld raises inside `env.step` and the example crashes); `MOVE_TO`
  moves without OSWorld's random easing and duration (the pointer ends at the same place); `TYPING`
  types as UI-TARS's `type` does (`parser.type_code`: `<`, `>`, non-ASCII and several lines through the
  checked clipboard paste, which `pyautogui.typewrite` mistypes or cannot type on X11).
"""

from __future__ import annotations

import json
import math
import re
import string
from typing import Any

from common.events import ParsedAction
from services.runner.agent.base import ParseError
from services.runner.agent.parser import type_code

SPECIAL_CODES = ("WAIT", "DONE", "FAIL")
#: What OSWorld puts before model-written code (`PythonController.pkgs_prefix`).
CODE_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
#: pyautogui's key names (`pyautogui.KEY_NAMES`, OSWorld's `desktop_env/actions.py` KEYBOARD_KEYS).
KEYBOARD_KEYS = frozenset(
    ["\t", "\n", "\r", " "] + [c for c in string.punctuation + string.digits + string.ascii_lowercase]
    + """accept add alt altleft altright apps backspace browserback browserfavorites browserforward browserhome
    browserrefresh browsersearch browserstop capslock clear convert ctrl ctrlleft ctrlright decimal del delete
    divide down end enter esc escape execute f1 f10 f11 f12 f13 f14 f15 f16 f17 f18 f19 f2 f20 f21 f22 f23 f24
    f3 f4 f5 f6 f7 f8 f9 final fn hanguel hangul hanja help home insert junja kana kanji launchapp1 launchapp2
    launchmail launchmediaselect left modechange multiply nexttrack nonconvert num0 num1 num2 num3 num4 num5
    num6 num7 num8 num9 numlock pagedown pageup pause pgdn pgup playpause prevtrack print printscreen prntscrn
    prtsc prtscr return right scrolllock select separator shift shiftleft shiftright sleep stop subtract tab up
    volumedown volumemute volumeup win winleft winright yen command option optionleft optionright""".split())

_CODE_BLOCK = re.compile(r"```(?:\w+\s+)?(.*?)```", re.DOTALL)
_JSON_BLOCK = re.compile(r"```json\s+(.*?)\s+```", re.DOTALL)
_PLAIN_BLOCK = re.compile(r"```\s+(.*?)\s+```", re.DOTALL)
_PRESS_LESS_THAN = re.compile(r"pyautogui\.press\([\"'](?:<|\\u003c)[\"']\)")
_TYPEWRITE = re.compile(r"pyautogui\.typewrite\(([\"'])(.*?)\1\)")


def code_blocks(text: str) -> list[str]:
    """The code of each fenced block of a `pyautogui` reply, special codes on a block's last line split
    off as their own entry (OSWorld's `parse_code_from_string`, without its `;` rewriting)."""
    if text.strip() in SPECIAL_CODES:
        return [text.strip()]
    codes: list[str] = []
    for match in _CODE_BLOCK.findall(text):
        block = match.strip()
        lines = block.split("\n")
        if block in SPECIAL_CODES:
            codes.append(block)
        elif lines[-1].strip() in SPECIAL_CODES:
            if len(lines) > 1:
                codes.append("\n".join(lines[:-1]).strip())
            codes.append(lines[-1].strip())
        else:
            codes.append(block)
    return [c for c in codes if c]


def fix_less_than(code: str) -> str:
    """OSWorld's `_fix_pyautogui_less_than_bug`: `press('<')` becomes `hotkey('shift', ',')` and each
    `<` in a `typewrite('...')` literal is typed that way (pyautogui types `>` for `<` on X11)."""
    code = _PRESS_LESS_THAN.sub('pyautogui.hotkey("shift", ",")', code)

    def split(match: re.Match[str]) -> str:
        quote, content = match.group(1), match.group(2)
        try:
            content = content.encode("utf-8").decode("unicode_escape")
        except UnicodeDecodeError:
            pass
        if "<" not in content:
            return match.group(0)
        parts = []
        for i, part in enumerate(content.split("<")):
            if i:
                parts.append('pyautogui.hotkey("shift", ",")')
            if part:
                parts.append(f"pyautogui.typewrite({quote}{part}{quote})")
        return "; ".join(parts)

    return _TYPEWRITE.sub(split, code)


def tag_variables(boxes: list[list[int]]) -> str:
    """`tag_1=(cx, cy)` lines for set-of-marks boxes `[x, y, w, h]` (their centres, OSWorld's format)."""
    return "".join(f"tag_{i}=({int(x + w // 2)}, {int(y + h // 2)})\n" for i, (x, y, w, h) in enumerate(boxes, 1))


def special(code: str) -> ParsedAction:
    """The action of a special code (`WAIT`, `DONE`, `FAIL`)."""
    return ParsedAction(action_type=code)


def pyautogui_actions(text: str, boxes: list[list[int]] | None = None) -> list[ParsedAction]:
    """Actions of a `pyautogui` reply: each code block becomes one action whose code is OSWorld's
    prefix, the set-of-marks tag variables when `boxes` is given, and the block with `<` fixed.
    Raises: ParseError when the reply has no code block."""
    codes = code_blocks(text)
    if not codes:
        raise ParseError("reply has no ```code``` block and is not WAIT, DONE or FAIL")
    tags = tag_variables(boxes) if boxes is not None else ""
    actions = []
    for code in codes:
        if code in SPECIAL_CODES:
            actions.append(special(code))
        else:
            actions.append(ParsedAction(action_type="pyautogui", inputs={"code": code},
                                        code=CODE_PREFIX + tags + fix_less_than(code)))
    return actions


def fenced_blocks(text: str) -> list[str]:
    """The ```json blocks of a `computer_13` reply, else its plain ``` blocks (OSWorld's
    `parse_actions_from_string` reads those; without any it reads the whole reply as JSON)."""
    return list(_JSON_BLOCK.findall(text) or _PLAIN_BLOCK.findall(text))


def computer_13_dicts(text: str) -> list[Any]:
    """The JSON actions of a `computer_13` reply: ```json blocks, else plain ``` blocks, else the whole
    reply as JSON; `WAIT`/`DONE`/`FAIL` alone (OSWorld's `parse_actions_from_string`).
    Raises: ParseError when a block or the reply is not JSON."""
    stripped = text.strip()
    if stripped in SPECIAL_CODES:
        return [stripped]
    blocks = fenced_blocks(text)
    try:
        if blocks:
            return [stripped_block if (stripped_block := b.strip()) in SPECIAL_CODES else json.loads(b)
                    for b in blocks]
        return [json.loads(text)]
    except json.JSONDecodeError as exc:
        raise ParseError(f"computer_13 action is not JSON: {exc}") from None


def _number(params: dict[str, Any], key: str) -> float:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ParseError(f"computer_13 parameter {key!r} must be a number, got {value!r}")
    return value


def _key(value: Any) -> str:
    if not isinstance(value, str) or value.lower() not in KEYBOARD_KEYS:
        raise ParseError(f"computer_13 key {value!r} is not one of pyautogui's key names")
    return value


def _click(params: dict[str, Any]) -> str:
    args = []
    if "button" in params:
        if params["button"] not in ("left", "right", "middle"):
            raise ParseError(f"computer_13 button must be left, right or middle, got {params['button']!r}")
        args.append(f"button={params['button']!r}")
    if ("x" in params) != ("y" in params):
        raise ParseError("computer_13 CLICK needs both x and y, or neither")
    if "x" in params:
        args += [f"x={_number(params, 'x')}", f"y={_number(params, 'y')}"]
    if "num_clicks" in params:
        clicks = params["num_clicks"]
        if isinstance(clicks, bool) or not isinstance(clicks, int) or clicks not in (1, 2, 3):
            raise ParseError(f"computer_13 num_clicks must be 1, 2 or 3, got {clicks!r}")
        args.append(f"clicks={clicks}")
    return f"pyautogui.click({', '.join(args)})"


def _point_call(func: str, params: dict[str, Any], required: bool = False) -> str:
    if "x" in params and "y" in params:
        return f"pyautogui.{func}({_number(params, 'x')}, {_number(params, 'y')})"
    if required or params:
        raise ParseError(f"computer_13 {func} needs x and y, got {sorted(params)}")
    return f"pyautogui.{func}()"


def _button_call(func: str, params: dict[str, Any]) -> str:
    if not params:
        return f"pyautogui.{func}()"
    if params.get("button") not in ("left", "right", "middle"):
        raise ParseError(f"computer_13 button must be left, right or middle, got {params.get('button')!r}")
    return f"pyautogui.{func}(button={params['button']!r})"


def computer_13_code(action_type: str, params: dict[str, Any]) -> str:
    """pyautogui code of one `computer_13` action (as OSWorld's `execute_action` runs it; see the module
    docstring for the deviations). Raises: ParseError naming what is wrong."""
    if action_type == "MOVE_TO":
        body = _point_call("moveTo", params)
    elif action_type == "CLICK":
        body = _click(params)
    elif action_type in ("MOUSE_DOWN", "MOUSE_UP"):
        body = _button_call("mouseDown" if action_type == "MOUSE_DOWN" else "mouseUp", params)
    elif action_type in ("RIGHT_CLICK", "DOUBLE_CLICK"):
        body = _point_call("rightClick" if action_type == "RIGHT_CLICK" else "doubleClick", params)
    elif action_type == "DRAG_TO":
        body = f"pyautogui.dragTo({_number(params, 'x')}, {_number(params, 'y')}, duration=1.0, button='left', " \
               "mouseDownUp=True)" if "x" in params and "y" in params else ""
        if not body:
            raise ParseError("computer_13 DRAG_TO needs x and y")
    elif action_type == "SCROLL":
        calls = [f"pyautogui.{f}({int(_number(params, k))})" for k, f in (("dx", "hscroll"), ("dy", "vscroll"))
                 if k in params]
        if not calls:
            raise ParseError("computer_13 SCROLL needs dx or dy")
        body = "\n".join(calls)
    elif action_type == "TYPING":
        if not isinstance(params.get("text"), str):
            raise ParseError("computer_13 TYPING needs a string 'text'")
        return type_code(params["text"])
    elif action_type in ("PRESS", "KEY_DOWN", "KEY_UP"):
        func = {"PRESS": "press", "KEY_DOWN": "keyDown", "KEY_UP": "keyUp"}[action_type]
        body = f"pyautogui.{func}({_key(params.get('key'))!r})"
    elif action_type == "HOTKEY":
        keys = params.get("keys")
        if not isinstance(keys, list) or not keys:
            raise ParseError("computer_13 HOTKEY needs a list of 'keys'")
        body = f"pyautogui.hotkey({', '.join(repr(_key(k)) for k in keys)})"
    else:
        raise ParseError(f"unknown computer_13 action_type {action_type!r}")
    return CODE_PREFIX + body


def computer_13_actions(text: str) -> list[ParsedAction]:
    """Actions of a `computer_13` reply, each with its code. Raises: ParseError."""
    actions = []
    for item in computer_13_dicts(text):
        if isinstance(item, str):
            actions.append(special(item))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("action_type"), str):
            raise ParseError(f"computer_13 action must be an object with an 'action_type', got {item!r:.100}")
        action_type = item["action_type"]
        params = item["parameters"] if "parameters" in item else {k: v for k, v in item.items() if k != "action_type"}
        if not isinstance(params, dict):
            raise ParseError(f"computer_13 parameters must be an object, got {params!r:.100}")
        if action_type in SPECIAL_CODES:
            actions.append(special(action_type))
            continue
        actions.append(ParsedAction(action_type=action_type, inputs=params, code=computer_13_code(action_type, params)))
    if not actions:
        raise ParseError("reply has no computer_13 action")
    return actions
