"""Hypothesis fuzz of the UI-TARS action parser: any reply either parses into actions whose code is
valid Python with on-screen coordinates, or raises `ParseError`; nothing else ever escapes (the parser
has no catch-all, so this checks the tokenizer itself).

Inputs come from a grammar of UI-TARS replies (verbs, argument names, quoted strings with quotes,
escapes and newlines, every coordinate form, huge numbers) that are then cut, spliced with random
text or left alone, plus fully random text. `test_parser_fuzz_short` (2,000 inputs) is in the normal
suite; `test_parser_fuzz_slow` (50,000 inputs) is marked `slow` and run by `make fuzz`.
"""

from __future__ import annotations

import ast
import random

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from services.runner.agent.parser import VERBS, ParsedResponse, ParseError, parse_response

SCREEN = (1920, 1080)
RESIZED = (1932, 1092)

_VERBS = sorted(VERBS) + ["FAIL", "DONE", "WAIT", "finish", "Click", "x_1", "_"]
_ARGS = ["start_box", "end_box", "point", "start_point", "end_point", "key", "keys", "content", "direction", "x"]
_TRICKY = ["'", '"', "\\", "\\n", "\\'", '\\"', ")", "(", ",", "=", "\n", " ", "<", ">", "+", "Action:", "Thought:",
           "<|box_start|>", "<|box_end|>", "<point>", "</point>", "é", "中", "\x00", "\u2028", "🙂", "9" * 400,
           "-", ".", "١٢", "up", "down", "ctrl+c", "Enter", "ctrl shift t", "a", "hello world"]
_COORDINATE_FORMS = ["({a},{b})", "<|box_start|>({a},{b})<|box_end|>", "[{a},{b},{c},{d}]", "<point>{a} {b}</point>",
                     "({a}, {b})", "{a}", "({a},{b},{c})"]


def _text(rnd: random.Random) -> str:
    parts = []
    for _ in range(rnd.randint(0, 6)):
        if rnd.random() < 0.7:
            parts.append(rnd.choice(_TRICKY))
        else:
            parts.append("".join(chr(rnd.choice((rnd.randint(32, 126), rnd.randint(0, 0x2FFF)))) for _ in range(3)))
    return "".join(parts)


def _number(rnd: random.Random) -> str:
    return rnd.choice([str(rnd.randint(-10_000, 100_000)), f"{rnd.uniform(-1e6, 1e6):.2f}", "9" * 400, "", "-",
                       str(rnd.randint(0, 2000))])


def _value(rnd: random.Random) -> str:
    if rnd.random() < 0.5:
        inner = rnd.choice(_COORDINATE_FORMS).format(a=_number(rnd), b=_number(rnd), c=_number(rnd), d=_number(rnd))
    else:
        inner = _text(rnd)
    quote = rnd.choice(["'", '"', ""])
    if not quote:
        return inner
    if rnd.random() < 0.5:
        inner = inner.replace("\\", "\\\\")
    return quote + inner + (quote if rnd.random() < 0.9 else "")  # sometimes unterminated


_WELL_FORMED = {"click": ["start_box"], "left_double": ["start_box"], "right_single": ["start_box"],
                "hover": ["point"], "drag": ["start_box", "end_box"], "hotkey": ["key"], "press": ["key"],
                "type": ["content"], "scroll": ["start_box", "direction"], "finished": ["content"]}


def _coordinate(rnd: random.Random) -> str:
    a, b, c, d = (str(rnd.randint(0, 2000)) if rnd.random() < 0.97 else "9" * 400 for _ in range(4))
    return "'" + rnd.choice(_COORDINATE_FORMS[:5]).format(a=a, b=b, c=c, d=d) + "'"


def _call(rnd: random.Random) -> str:
    verb = rnd.choice(_VERBS)
    if verb in ("FAIL", "DONE", "WAIT") and rnd.random() < 0.5:
        return verb
    if verb in _WELL_FORMED and rnd.random() < 0.6:  # mostly right: reaches the code generators
        args = []
        for name in _WELL_FORMED[verb]:
            if name in ("start_box", "end_box", "point"):
                value = _coordinate(rnd) if rnd.random() < 0.8 else _value(rnd)
            elif name == "direction":
                value = repr(rnd.choice(["up", "down", "left", "right", "UP", "sideways"]))
            else:
                value = _value(rnd) if rnd.random() < 0.5 else repr(_text(rnd))
            args.append(f"{name}={value}")
    else:
        args = [rnd.choice(_ARGS) + rnd.choice(["=", " = ", ""]) + _value(rnd) for _ in range(rnd.randint(0, 3))]
    return f"{verb}({rnd.choice([', ', ',', ' ', ',' + chr(10)]).join(args)}{rnd.choice([')', ')', ')', ''])}"


def build_reply(rnd: random.Random) -> str:
    """A UI-TARS-like reply from the grammar above, then maybe cut or spliced with random text."""
    calls = [_call(rnd) for _ in range(rnd.randint(0, 4))]
    reply = f"Thought: {_text(rnd)}\nAction: " + rnd.choice(["\n\n", "\n", " "]).join(calls)
    mutation = rnd.randint(0, 9)
    if mutation == 1:
        reply = reply[: rnd.randint(0, len(reply))]
    elif mutation == 2:
        at = rnd.randint(0, len(reply))
        reply = reply[:at] + _text(rnd) + reply[at:]
    return reply


# Grammar replies are built from a seeded `random.Random` (one draw per input: fast enough for 50,000);
# plain hypothesis text (shrunk on failure) covers the rest.
_INPUTS = st.one_of(st.randoms(use_true_random=True).map(build_reply), st.text(max_size=200),
                    st.text(max_size=60).map(lambda t: "Action: click(start_box='" + t))


def check_reply(text: str) -> None:
    """The property: a ParsedResponse with sound actions, or ParseError; nothing else."""
    try:
        parsed = parse_response(text, SCREEN, RESIZED)
    except ParseError as exc:
        assert str(exc)  # the message says what is wrong
        return
    assert isinstance(parsed, ParsedResponse) and parsed.actions
    for action in parsed.actions:
        ast.parse(action.code)  # the generated pyautogui code is valid Python
        for axis, limit in (("x", SCREEN[0]), ("y", SCREEN[1]), ("x1", SCREEN[0]), ("y1", SCREEN[1]),
                            ("x2", SCREEN[0]), ("y2", SCREEN[1])):
            if axis in action.inputs:
                assert 0 <= action.inputs[axis] < limit
    assert parsed.terminal in (None, "DONE", "FAIL")


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                 database=None)


@settings(max_examples=2_000, **_SETTINGS)  # type: ignore[arg-type]
@given(_INPUTS)
def test_parser_fuzz_short(text: str) -> None:
    note(repr(text))
    check_reply(text)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@settings(max_examples=50_000, **_SETTINGS)  # type: ignore[arg-type]
@given(_INPUTS)
def test_parser_fuzz_slow(text: str) -> None:
    note(repr(text))
    check_reply(text)


@pytest.mark.parametrize("text", [
    "Action: click(start_box='(" + "9" * 400 + ",5)')",  # inf coordinates: was an OverflowError
    "Action: click(start_box='(١٢,٣٤)')",  # Unicode digits
    "Action: type(content='a\\",  # escape at the very end
    "Action: drag(start_box='(1,2)', end_box=)",
    "Action: hotkey(key='')",
    "Action: \x00",
])
def test_known_hard_inputs(text: str) -> None:
    check_reply(text)
