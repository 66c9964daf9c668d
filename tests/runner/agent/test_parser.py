"""UI-TARS parser: the action grammar, the reference parser's known failures, and never crashing."""

from __future__ import annotations

import ast
import random

import pytest

from services.runner.agent.parser import ParseError, normalize_keys, parse_response, type_code
from services.runner.agent.smart_resize import smart_resize, to_screen

SCREEN = (1920, 1080)
RESIZED = (1932, 1092)


def parse(action: str, thought: str = "I act.") -> object:
    return parse_response(f"Thought: {thought}\nAction: {action}", SCREEN, RESIZED)


def only(action: str) -> object:
    response = parse(action)
    assert len(response.actions) == 1  # type: ignore[attr-defined]
    return response.actions[0]  # type: ignore[attr-defined]


def test_smart_resize_known_values() -> None:
    assert smart_resize(1080, 1920) == (1092, 1932)
    assert smart_resize(28, 28) == (280, 280)  # below min_pixels: scaled up
    h, w = smart_resize(10000, 10000)
    assert h * w <= 16384 * 28 * 28 and h % 28 == 0 and w % 28 == 0
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 5000)


def test_to_screen_maps_and_clamps() -> None:
    assert to_screen(966, 546, RESIZED, SCREEN) == (960, 540)
    assert to_screen(0, 0, RESIZED, SCREEN) == (0, 0)
    assert to_screen(5000, 5000, RESIZED, SCREEN) == (1919, 1079)
    assert to_screen(285.5, 5e307, RESIZED, SCREEN) == (284, 1079)  # the product would overflow (parser fuzz)
    assert to_screen(-5e307, 1e308, RESIZED, SCREEN) == (0, 1079)


@pytest.mark.parametrize("box", ["(966,546)", "<|box_start|>(966,546)<|box_end|>", "[956,536,976,556]",
                                 "<|box_start|>(966, 546)<|box_end|>", "<point>966 546</point>", "(966.0,546.0)"])
def test_click_coordinate_forms_and_box_tokens(box: str) -> None:
    action = only(f"click(start_box='{box}')")
    assert action.inputs == {"x": 960, "y": 540}
    assert action.code.endswith("pyautogui.click(960, 540)")
    assert "box" not in action.code


def test_point_argument_spelling() -> None:
    assert only("click(point='<point>966 546</point>')").inputs == {"x": 960, "y": 540}


@pytest.mark.parametrize(("verb", "func"), [("left_double", "doubleClick"), ("right_single", "rightClick"),
                                            ("hover", "moveTo")])
def test_other_pointer_verbs(verb: str, func: str) -> None:
    assert f"pyautogui.{func}(960, 540)" in only(f"{verb}(start_box='(966,546)')").code


def test_drag() -> None:
    action = only("drag(start_box='(0,0)', end_box='(966,546)')")
    assert "pyautogui.moveTo(0, 0)" in action.code and "dragTo(960, 540, duration=0.3, button='left')" in action.code


@pytest.mark.parametrize(("spec", "keys"), [
    ("ctrl c", ["ctrl", "c"]), ("ctrl+c", ["ctrl", "c"]), ("Ctrl+Shift+T", ["ctrl", "shift", "t"]),
    ("ctrl alt t", ["ctrl", "alt", "t"]), ("arrowleft", ["left"]), ("Esc", ["escape"]),
    ("cmd space", ["win", "space"]), ("Return", ["enter"]), ("pgdn", ["pagedown"]),
])
def test_hotkey_normalisation(spec: str, keys: list[str]) -> None:
    assert normalize_keys(spec) == keys
    action = only(f"hotkey(key='{spec}')")
    assert action.inputs["keys"] == keys
    if len(keys) > 1:
        expected = f"pyautogui.hotkey({', '.join(repr(k) for k in keys)})"
    else:
        expected = f"pyautogui.press({keys[0]!r})"
    assert expected in action.code


def test_press() -> None:
    assert "pyautogui.press('enter')" in only("press(key='enter')").code


def test_type_with_escaped_quotes_and_newline_submits() -> None:
    action = only(r"type(content='say \'hi\' and \"bye\"\n')")
    assert action.inputs["content"] == "say 'hi' and \"bye\"\n"
    assert "pyautogui.write('say \\'hi\\' and \"bye\"', interval=0.0)" in action.code
    assert action.code.endswith("pyautogui.press('enter')")


def test_type_with_unescaped_quote_inside_is_kept() -> None:
    assert only("type(content='it's fine')").inputs["content"] == "it's fine"


def test_type_with_literal_newlines_and_backslashes() -> None:
    action = only("type(content='line1\nline2\\\\path\\n')")
    assert action.inputs["content"] == "line1\nline2\\path\n"
    assert "paste_text(" in action.code  # multi-line text is pasted
    compile(action.code, "<code>", "exec")


@pytest.mark.parametrize("text", ["a < b", "x > y", "héllo", "日本語", "emoji 🎉"])
def test_less_than_and_non_ascii_go_through_the_clipboard(text: str) -> None:
    code = type_code(text)
    assert f"paste_text({text!r}, " in code and "pyautogui.write" not in code  # checked paste (test_clipboard.py)
    calls = [node.value for node in ast.parse(code).body
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)]
    assert [ast.unparse(c.func) for c in calls] == ["paste_text"]
    assert [ast.literal_eval(a) for a in calls[0].args] == [text, 5.0, 200_000]


def test_type_code_is_valid_python_for_hostile_content() -> None:
    for content in ["'; import os; os.system('rm -rf /') #", '"""', "\\", "a\nb\n", "')", ""]:
        compile(type_code(content), "<code>", "exec")


@pytest.mark.parametrize(("direction", "call"), [("up", "pyautogui.scroll(5)"), ("down", "pyautogui.scroll(-5)"),
                                                 ("left", "pyautogui.hscroll(5)"), ("right", "pyautogui.hscroll(-5)")])
def test_scroll_vertical_and_horizontal(direction: str, call: str) -> None:
    action = only(f"scroll(start_box='(966,546)', direction='{direction}')")
    assert "pyautogui.moveTo(960, 540)" in action.code and call in action.code


def test_scroll_bad_direction() -> None:
    with pytest.raises(ParseError, match="direction"):
        parse("scroll(start_box='(1,1)', direction='sideways')")


def test_terminal_actions() -> None:
    assert parse("finished(content='done')").terminal == "DONE"  # type: ignore[attr-defined]
    assert parse("call_user()").terminal == "FAIL"  # type: ignore[attr-defined]
    assert parse("FAIL").terminal == "FAIL"  # type: ignore[attr-defined]
    wait = only("wait()")
    assert wait.action_type == "WAIT" and wait.code == ""


def test_thought_never_enters_code() -> None:
    thought = "I will click; import os; os.remove('x') # evil"
    response = parse("click(start_box='(1,1)')", thought=thought)
    assert response.thought == thought  # type: ignore[attr-defined]
    assert all("evil" not in a.code and "os.remove" not in a.code for a in response.actions)  # type: ignore[attr-defined]


def test_multiple_actions() -> None:
    response = parse("hotkey(key='ctrl a')\n\ntype(content='x')")
    assert [a.action_type for a in response.actions] == ["hotkey", "type"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("reply", "message"), [
    ("Thought: hmm, nothing to do", "no 'Action:'"), ("Action: fly(to='moon')", "unknown action"),
    ("Action: click()", "missing click start_box"), ("Action: click(start_box='(1)')", "not a point"),
    ("Action: type(content='unterminated", "unterminated"), ("Action: click(start_box='(1,2)'", "missing"),
    ("Action: ", "empty Action"), ("Action: type()", "without content"), ("Action: hotkey(key='')", "without a key"),
    ("Action: click start_box", "no argument list"), ("Action: click(=3)", "bad argument"),
])
def test_unparseable_replies_raise_parse_error_naming_the_problem(reply: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_response(reply, SCREEN, RESIZED)


def test_never_raises_anything_but_parse_error() -> None:
    valid = ["Thought: a\nAction: click(start_box='<|box_start|>(966,546)<|box_end|>')",
             "Thought: b\nAction: type(content='x \\'y\\' <z>\\n')",
             "Thought: c\nAction: drag(start_box='(1,2)', end_box='[1,2,3,4]')",
             "Thought: d\nAction: scroll(start_box='(1,1)', direction='left')"]
    rng = random.Random(7)
    samples = [v[:i] for v in valid for i in range(len(v) + 1)]
    alphabet = "()[]<>'\",=\\\n |_:ActionThoughtclicktype0123456789"
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(3000)]
    samples += ["Action: " + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(3000)]
    for sample in samples:
        try:
            parse_response(sample, SCREEN, RESIZED)
        except ParseError:
            pass
