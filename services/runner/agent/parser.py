"""Parser of UI-TARS-1.5 replies into actions and pyautogui code (SPEC section 4, "Agent").

Grammar as in the UI-TARS repository's action parser (`parse_action_to_structure_output` /
`parsing_response_to_pyautogui_code`), with its known failures fixed: arguments are read by a real
tokenizer (quotes, escapes and newlines inside `type` content survive), box tokens are stripped,
`ctrl+c`-style hotkeys are split, horizontal scroll uses `hscroll`, `<`/`>`/non-ASCII/multi-line text
goes through the clipboard, `press` exists, and the model's thought never enters the code.
Any input either parses or raises `ParseError`; nothing else escapes (there is no catch-all: the
hypothesis fuzz in `tests/runner/agent/test_parser_fuzz.py` checks the tokenizer itself).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from common.events import ParsedAction
from services.runner.agent.base import ParsedResponse, ParseError, terminal_of
from services.runner.agent.clipboard import MAX_PASTE_BYTES, paste_source
from services.runner.agent.smart_resize import to_screen

VERBS = {"click", "left_double", "right_single", "drag", "hotkey", "type", "scroll", "wait", "finished",
         "call_user", "press", "hover"}
KEY_ALIASES = {
    "arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down", "esc": "escape",
    "cmd": "win", "super": "win", "meta": "win", "command": "win", "return": "enter", "pgdn": "pagedown",
    "pgup": "pageup", "page_down": "pagedown", "page_up": "pageup", "del": "delete", "control": "ctrl",
    "option": "alt", "spacebar": "space", "ins": "insert", "bksp": "backspace",
}
_BOX_TOKENS = re.compile(r"<\|box_start\|>|<\|box_end\|>|<point>|</point>|<bbox>|</bbox>")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
#: Seconds a clipboard paste may wait for each of its checks (see `clipboard.paste_text`).
PASTE_TIMEOUT_S = 5.0
_ESCAPES = {"n": "\n", "t": "\t", "'": "'", '"': '"', "\\": "\\"}


__all__ = ["ParseError", "ParsedResponse", "parse_response", "split_reply", "type_code", "normalize_keys"]


@dataclass
class _Call:
    verb: str
    args: dict[str, str]


def _read_string(text: str, i: int) -> tuple[str, int]:
    """Read a quoted string starting at text[i] (a quote); returns (value, index after the closing quote)."""
    quote = text[i]
    out: list[str] = []
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        if ch == quote:
            # A quote followed by more text before `,` or `)` is a quote inside the content that the
            # model forgot to escape: keep it (the reference parser cut the content here).
            rest = text[i + 1:].lstrip(" ")
            if rest == "" or rest[0] in ",)":
                return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise ParseError("unterminated string argument")


def _read_calls(action_text: str) -> list[_Call]:
    calls: list[_Call] = []
    i, n = 0, len(action_text)
    while i < n:
        if action_text[i].isspace():
            i += 1
            continue
        match = re.compile(r"[A-Za-z_]\w*").match(action_text, i)
        if not match:
            raise ParseError(f"expected an action name at {action_text[i:i + 20]!r}")
        verb = match.group(0)
        i = match.end()
        while i < n and action_text[i] == " ":
            i += 1
        if verb in ("FAIL", "DONE", "WAIT") and (i >= n or action_text[i] != "("):
            calls.append(_Call(verb, {}))
            continue
        if i >= n or action_text[i] != "(":
            raise ParseError(f"action {verb!r} has no argument list")
        i += 1
        args: dict[str, str] = {}
        while True:
            while i < n and action_text[i] in " \n\t,":
                i += 1
            if i >= n:
                raise ParseError(f"action {verb!r}: missing ')'")
            if action_text[i] == ")":
                i += 1
                break
            name = re.compile(r"[A-Za-z_]\w*").match(action_text, i)
            if not name:
                raise ParseError(f"action {verb!r}: bad argument at {action_text[i:i + 20]!r}")
            i = name.end()
            while i < n and action_text[i] == " ":
                i += 1
            if i >= n or action_text[i] != "=":
                raise ParseError(f"action {verb!r}: argument {name.group(0)!r} has no value")
            i += 1
            while i < n and action_text[i] == " ":
                i += 1
            if i < n and action_text[i] in "'\"":
                value, i = _read_string(action_text, i)
            else:
                bare = re.compile(r"[^,)]*").match(action_text, i)
                value = bare.group(0).strip() if bare else ""
                i = bare.end() if bare else i
            args[name.group(0)] = value
        calls.append(_Call(verb, args))
    if not calls:
        raise ParseError("empty Action")
    return calls


def _point(value: str | None, what: str, resized: tuple[int, int], screen: tuple[int, int]) -> tuple[int, int]:
    if not value:
        raise ParseError(f"missing {what}")
    numbers = [float(x) for x in _NUMBER.findall(_BOX_TOKENS.sub(" ", value))]
    if not all(math.isfinite(n) for n in numbers):  # 400 digits read as float are inf
        raise ParseError(f"{what} {value[:80]!r} has a coordinate too large")
    if len(numbers) == 2:
        x, y = numbers
    elif len(numbers) == 4:
        x, y = (numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2
    else:
        raise ParseError(f"{what} {value!r} is not a point or a box")
    return to_screen(x, y, resized, screen)


def normalize_keys(spec: str) -> list[str]:
    """`'ctrl+c'`, `'ctrl c'`, `'Ctrl+Shift+T'` -> pyautogui key names (`['ctrl', 'shift', 't']`)."""
    keys = [k for k in re.split(r"[+\s]+", spec.strip().lower()) if k]
    if not keys:
        raise ParseError("hotkey/press without a key")
    return [KEY_ALIASES.get(k, k) for k in keys]


def writable_by_pyautogui(text: str) -> bool:
    """Whether `pyautogui.write` types `text` right on X11: single-line ASCII without `<` / `>`
    (it mistypes those and cannot type non-ASCII)."""
    return text.isascii() and "<" not in text and ">" not in text and "\n" not in text


def type_code(text: str) -> str:
    """pyautogui code typing `text`; a trailing newline presses enter.

    Plain single-line ASCII without `<`/`>` uses `pyautogui.write`; anything else is pasted from the
    clipboard (pyautogui on X11 mistypes `<`, `>` and cannot type non-ASCII) by `clipboard.paste_text`,
    which checks that the selection is ours and holds the text before ctrl+v and that the focused
    application was sent the text before any later key (the enter). A failed check exits with code 1.
    """
    submit = text.endswith("\n")
    body = text[:-1] if submit else text
    lines = ["import pyautogui"]
    if body:
        if writable_by_pyautogui(body):
            lines.append(f"pyautogui.write({body!r}, interval=0.0)")
        else:
            lines += [paste_source(), f"paste_text({body!r}, {PASTE_TIMEOUT_S!r}, {MAX_PASTE_BYTES})"]
    if submit:
        lines.append("pyautogui.press('enter')")
    return "\n".join(lines)


def _to_action(call: _Call, resized: tuple[int, int], screen: tuple[int, int]) -> ParsedAction:
    verb, args = call.verb, call.args
    box = args.get("start_box") or args.get("point") or args.get("start_point")
    if verb in ("click", "left_double", "right_single", "hover"):
        x, y = _point(box, f"{verb} start_box", resized, screen)
        func = {"click": "click", "left_double": "doubleClick", "right_single": "rightClick", "hover": "moveTo"}[verb]
        return ParsedAction(action_type=verb, inputs={"x": x, "y": y},
                            code=f"import pyautogui\npyautogui.{func}({x}, {y})")
    if verb == "drag":
        x1, y1 = _point(box, "drag start_box", resized, screen)
        x2, y2 = _point(args.get("end_box") or args.get("end_point"), "drag end_box", resized, screen)
        return ParsedAction(action_type=verb, inputs={"x1": x1, "y1": y1, "x2": x2, "y2": y2},
                            code=f"import pyautogui\npyautogui.moveTo({x1}, {y1})\n"
                                 f"pyautogui.dragTo({x2}, {y2}, duration=0.3, button='left')")
    if verb in ("hotkey", "press"):
        keys = normalize_keys(args.get("key", args.get("keys", "")))
        code = f"pyautogui.hotkey({', '.join(repr(k) for k in keys)})" if len(keys) > 1 else \
            f"pyautogui.press({keys[0]!r})"
        return ParsedAction(action_type=verb, inputs={"keys": keys}, code="import pyautogui\n" + code)
    if verb == "type":
        if "content" not in args:
            raise ParseError("type without content")
        return ParsedAction(action_type=verb, inputs={"content": args["content"]}, code=type_code(args["content"]))
    if verb == "scroll":
        direction = args.get("direction", "").strip().lower()
        if direction not in ("up", "down", "left", "right"):
            raise ParseError(f"scroll direction must be up/down/left/right, got {direction!r}")
        head = "import pyautogui\n"
        inputs: dict[str, object] = {"direction": direction}
        if box:
            x, y = _point(box, "scroll start_box", resized, screen)
            head += f"pyautogui.moveTo({x}, {y})\n"
            inputs.update(x=x, y=y)
        amount = 5 if direction in ("up", "left") else -5
        func = "scroll" if direction in ("up", "down") else "hscroll"
        return ParsedAction(action_type=verb, inputs=inputs, code=f"{head}pyautogui.{func}({amount})")
    if verb in ("wait", "WAIT"):
        return ParsedAction(action_type="WAIT")
    if verb in ("finished", "DONE"):
        return ParsedAction(action_type="DONE", inputs={"content": args.get("content", "")})
    if verb in ("call_user", "FAIL"):
        return ParsedAction(action_type="FAIL")
    raise ParseError(f"unknown action {verb!r}")


def split_reply(text: str) -> tuple[str, str]:
    """(thought, action text) of a reply. Raises: ParseError when there is no `Action:`."""
    index = text.rfind("Action:")
    if index < 0:
        raise ParseError("reply has no 'Action:'")
    head, action = text[:index], text[index + len("Action:"):].strip()
    thought_at = head.find("Thought:")
    thought = head[thought_at + len("Thought:"):] if thought_at >= 0 else head
    return thought.strip(), action


def parse_response(text: str, screen: tuple[int, int], resized: tuple[int, int]) -> ParsedResponse:
    """Parse a UI-TARS reply. `screen` and `resized` are (width, height) in pixels.

    Raises: ParseError naming the problem; never any other exception.
    """
    thought, action_text = split_reply(text)
    actions = [_to_action(c, resized, screen) for c in _read_calls(action_text)]
    return ParsedResponse(thought=thought, actions=actions, terminal=terminal_of(actions))
