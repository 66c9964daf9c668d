"""`GET /terminal` (services/desktop_env/terminal.py): pyte's screen over xterm's log, at the xterm's
size. Byte streams of known programs, then a real xterm with bash, readline, printf and less."""

from __future__ import annotations

from common.env_client import DesktopEnvClient
from common.polling import wait_until
from services.desktop_env.terminal import MAX_REPLAY_BYTES, SAVE_LINES, render


def test_long_lines_wrap_at_the_terminal_width_and_read_as_one_line() -> None:
    # bash redraws a command line it edits across rows by moving the cursor up (CUU) and right (CUF)
    # and erasing (EL): without the wrap at 10 columns these moves land on the wrong cells.
    typed = b"$ 0123456789abcdefgh\x1b[A\r\x1b[2CX\x1b[K\r\nyz"
    assert render(typed, columns=10, lines=5) == "$ X\nyzabcdefgh"
    assert render(b"A" * 25 + b"\r\nnext", columns=10) == "A" * 25 + "\nnext"
    assert render(b"A" * 20 + b"\r\n", columns=10) == "A" * 20  # an exactly full row is not joined


def test_cursor_moves_erasing_and_scroll_regions() -> None:
    assert render(b"abc\x1b[2Dz\r\n\x1b[4;3Hhere") == "azc\n\n\n  here"
    assert render(b"$ abcd\x08\x1b[K\x08Xc\x08\r\nout\r\n\x1b]0;title\x07$ \x1b[H\x1b[2Jafter clear\r\n$ ") == \
        "after clear\n$"
    # a scroll region (rows 2-3) scrolls inside itself; what leaves it is not scrollback
    region = b"top\r\n\x1b[2;3r\x1b[2;1Ha\r\nb\r\nc\x1b[r\x1b[4;1Hbottom"
    assert render(region, columns=10, lines=4) == "top\nb\nc\nbottom"


def test_scrollback_is_kept_as_xterm_keeps_it_and_clear_drops_it() -> None:
    numbers = b"".join(b"%d\r\n" % i for i in range(SAVE_LINES + 50))
    text = render(numbers, columns=10, lines=5).split("\n")
    assert text[0] == str(SAVE_LINES + 50 - SAVE_LINES - 4) and text[-1] == str(SAVE_LINES + 49)
    assert render(numbers + b"\x1b[H\x1b[2J\x1b[3J$ ", columns=10, lines=5) == "$"  # what `clear` sends


def test_full_screen_programs_use_the_alternate_screen() -> None:
    assert render(b"$ vim\r\n\x1b[?1049h\x1b[H\x1b[2JFULLSCREEN") == "FULLSCREEN"  # while it runs
    assert render(b"$ vim\r\n\x1b[?1049h\x1b[H\x1b[2JFULLSCREEN\x1b[?1049l$ done") == "$ vim\n$ done"


def test_only_the_tail_of_a_long_log_is_replayed() -> None:
    log = b"first line\r\n" + b"z" * 50 + b"\r\n" * (MAX_REPLAY_BYTES // 50) + b"last"
    text = render(log, columns=100, lines=5)
    assert text.endswith("\nlast") and "first line" not in text


PROMPT = ("$", "#")  # bash's `\\$`: `#` when the env runs as root (unsandboxed, as root)


def _keys(env: DesktopEnvClient, text: str = "", *keys: str) -> None:
    code = f"import pyautogui; pyautogui.write({text!r})" + "".join(f"; pyautogui.press({k!r})" for k in keys)
    assert env.execute(["python", "-c", code]).returncode == 0


def test_a_real_xterm_reads_as_it_shows(env: DesktopEnvClient) -> None:
    env.launch(["desktop-terminal", "-geometry", "40x12"])
    wait_until(lambda: env.activate_window("Terminal"), 10, "the xterm's window")
    wait_until(lambda: env.terminal().endswith(PROMPT), 10, "the prompt")
    _keys(env, r"stty size; printf 'abc\033[2Dz\n'", "enter")
    assert wait_until(lambda: "\nazc" in (text := env.terminal()) and text, 10, "printf's output").count("12 40") == 1
    # a command line longer than the 40 columns, edited in the middle: readline redraws it across rows
    _keys(env, "echo " + "x" * 50, "home", *["right"] * 6)
    _keys(env, "Y", "end")
    _keys(env, " done", "enter")
    done = wait_until(lambda: (text := env.terminal()).endswith(PROMPT) and "done" in text and text, 10, "the echo")
    lines = done.split("\n")
    assert lines[-3].endswith(" echo xYxxxx" + "x" * 45 + " done") and lines[-2] == "xY" + "x" * 49 + " done"
    _keys(env, "seq 100 | less", "enter")
    in_less = wait_until(lambda: (text := env.terminal()).startswith("1\n") and text, 10, "less's screen")
    assert in_less.split("\n")[:11] == [str(i) for i in range(1, 12)] and "azc" not in in_less
    _keys(env, "q")
    # xterm restores the main screen after less's alternate one: poll until it is whole (a read may catch it midway)
    back = wait_until(lambda: "azc" in (text := env.terminal()) and text.split("\n")[-2].endswith(" seq 100 | less")
                      and text, 10, "the shell's screen back")
    assert "\n1\n2\n" not in back
