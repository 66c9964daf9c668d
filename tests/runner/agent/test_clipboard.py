"""Typing through the generated `type(content=...)` code into a real xterm on a real Xvfb desktop, read
back exactly (the clipboard paste is checked: owned and holding the text before ctrl+v, delivered to
the focused application before the next key).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.env_client import DesktopEnvClient
from common.polling import wait_until
from services.desktop_env.launcher import LocalEnvLauncher
from services.runner.agent.clipboard import paste_source
from services.runner.agent.parser import parse_response

SCREEN = (1920, 1080)
OUT = "~/typed.txt"
END = "__END_OF_TYPING__"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DesktopEnvClient]:
    with LocalEnvLauncher(count=1, root_dir=tmp_path_factory.mktemp("envs")) as launcher:
        client = DesktopEnvClient(launcher.urls[0])
        yield client
        client.close()


def corpus(count: int, seed: int = 15) -> list[str]:
    """`count` strings `"{i}:<text>\\n"`: plain ASCII, shell metacharacters, newlines inside, non-ASCII,
    and long ones (up to 3,000 characters on one line, or ~120-character lines)."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "ls -la", "echo hi", "x=1", "path/to/file.txt", "Hello World", "a,b"]
    special = "<>|&;\"'`$(){}[]*?!#~\\%^="
    foreign = ["é", "ü", "ß", "中文", "日本語", "Ωμέγα", "ñandú", "€", "😀", "Привет", "ا", "한국어"]
    strings = []
    for i in range(count):
        kind = i % 5
        if kind == 0:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        elif kind == 1:
            text = "".join(rng.choice(special + "ab ") for _ in range(rng.randint(1, 40)))
        elif kind == 2:
            lines = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 4))) + rng.choice(["", "<", "&&", "'"])
                     for _ in range(rng.randint(2, 5))]
            text = "\n".join(lines)
        elif kind == 3:
            text = " ".join(rng.choice(foreign + words) for _ in range(rng.randint(1, 8)))
        else:
            line = "".join(rng.choice("abcdefghij <>|;'\"é\\") for _ in range(rng.randint(300, 3000)))
            text = line if i % 10 == 4 else "\n".join(line[j:j + 120] for j in range(0, len(line), 120))
        strings.append(f"{i}:{text}\n")
    return strings


def as_reply(strings: list[str]) -> str:
    """A UI-TARS reply typing each string (content quoted with the grammar's escapes)."""
    def quote(text: str) -> str:
        return text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")

    return "Thought: typing\nAction: " + "\n\n".join(f"type(content='{quote(s)}')" for s in strings)


def _run(env: DesktopEnvClient, code: str) -> None:
    result = env.execute(["python", "-c", code], timeout_s=120)
    assert result.returncode == 0, result.error


def _cat_into(env: DesktopEnvClient, path: str) -> None:
    """A terminal whose shell runs `cat > path` with echo off: every typed byte lands in the file."""
    _run(env, "import pyautogui; pyautogui.hotkey('ctrl', 'alt', 't')")
    wait_until(lambda: "Terminal" in (env.execute(["wmctrl", "-l"]).output or ""), 20, "a Terminal window")
    assert env.activate_window("Terminal")
    _run(env, f"import pyautogui; pyautogui.write('stty -echo; cat > {path}'); pyautogui.press('enter')")
    wait_until(lambda: "cat" in (env.execute(["ps", "-eo", "comm"]).output or "").split(), 20,
               "cat reading the terminal")


def test_1000_strings_typed_through_the_generated_code_are_read_back_exactly(env: DesktopEnvClient) -> None:
    env.reset()
    strings = corpus(1000)
    _cat_into(env, OUT)
    pasted = 0
    for start in range(0, len(strings), 10):  # 10 type actions per /execute, each its own generated code
        actions = parse_response(as_reply(strings[start:start + 10]), SCREEN, SCREEN).actions
        assert [a.inputs["content"] for a in actions] == strings[start:start + 10]
        pasted += sum("paste_text(" in a.code for a in actions)
        _run(env, "\n".join(a.code for a in actions))
    _run(env, f"import pyautogui; pyautogui.write('{END}'); pyautogui.press('enter')")
    data = wait_until(lambda: (lambda b: b if b and END.encode() in b else None)(env.get_file(OUT)), 30,
                      "the end marker in the file", interval_s=0.2)
    text = data.decode("utf-8")
    assert pasted >= 700  # most strings need the clipboard (`<`, `>`, newlines, non-ASCII)
    wrong, at = [], 0
    for string in strings:  # each string where it belongs, byte for byte
        if text[at:at + len(string)] != string:
            wrong.append((string[:60], text[at:at + 60]))
            found = text.find("\n" + str(int(string.split(":", 1)[0]) + 1) + ":", at)
            at = found + 1 if found >= 0 else at
        else:
            at += len(string)
    assert not wrong, f"{len(wrong)} of {len(strings)} strings typed wrong, first: {wrong[:3]}"
    assert text[at:] == END + "\n"


def test_clipboard_keeps_the_pasted_text(env: DesktopEnvClient) -> None:
    env.reset()
    _cat_into(env, "~/one.txt")
    text = "ünïcode <b> & 'quotes'\nsecond line"
    _run(env, parse_response(as_reply([text + "\n"]), SCREEN, SCREEN).actions[0].code)
    clip = env.execute(["xclip", "-o", "-selection", "clipboard"])
    assert (clip.returncode, clip.output) == (0, text)
    typed = (text + "\n").encode()  # what the terminal's `cat` received, byte for byte
    assert wait_until(lambda: (lambda b: b if b is not None and len(b) >= len(typed) else None)(
        env.get_file("~/one.txt")), 20, "the typed text in ~/one.txt", interval_s=0.2) == typed


def test_a_paste_nobody_reads_is_an_action_error(env: DesktopEnvClient) -> None:
    env.reset()  # no window: nothing focused asks for the clipboard
    result = env.execute(["python", "-c", f"{paste_source()}\npaste_text('a<b', 0.5)"])
    assert result.returncode == 1
    assert "type: no application asked for the pasted text within 0.5 s" in (result.error or "")


def test_text_too_long_for_one_transfer_is_an_action_error(env: DesktopEnvClient) -> None:
    result = env.execute(["python", "-c", f"{paste_source()}\npaste_text('é' * 200, 0.5, 100)"])
    assert result.returncode == 1
    assert "400 bytes of text is more than one clipboard transfer (100)" in (result.error or "")


def test_generated_code_of_plain_text_needs_no_clipboard() -> None:
    actions = parse_response("Action: type(content='ls -la\\n')", SCREEN, SCREEN).actions
    assert actions[0].code == "import pyautogui\npyautogui.write('ls -la', interval=0.0)\npyautogui.press('enter')"


def test_paste_source_is_self_contained(tmp_path: Path) -> None:
    source = paste_source()
    assert source.startswith("def paste_text(") and '"""' not in source
    namespace: dict[str, object] = {}
    exec(compile(source, "<paste>", "exec"), namespace)  # defines the function, imports nothing yet
    assert callable(namespace["paste_text"])


def test_strings_pasted_into_a_gtk_editor_are_saved_exactly(env: DesktopEnvClient) -> None:
    env.reset()
    strings = [s for s in corpus(60, seed=16) if len(s) < 400]  # mousepad (GTK) paste: TARGETS, then UTF8_STRING
    env.launch(["mousepad", "/home/user/Documents/pasted.txt"])
    wait_until(lambda: "pasted.txt" in (env.execute(["wmctrl", "-l"]).output or ""), 30, "the editor window")
    assert env.activate_window("pasted.txt")
    for start in range(0, len(strings), 10):
        actions = parse_response(as_reply(strings[start:start + 10]), SCREEN, SCREEN).actions
        _run(env, "\n".join(a.code for a in actions))
    _run(env, "import pyautogui; pyautogui.hotkey('ctrl', 's')")
    expected = "".join(strings).encode()
    saved = wait_until(lambda: (lambda b: b if b is not None and len(b) >= len(expected) else None)(
        env.get_file("/home/user/Documents/pasted.txt")), 20, "the saved file", interval_s=0.2)
    assert saved == expected
