"""OSWorld's own `PythonController` (its PyPI package `desktop-env`, run unchanged in `.venv-oracle`,
see `osworld_client_runner.py`) against a real env pod: every method, every `execute_action` type.
Input actions are checked by the X events they produce (`InputRecorder`), files and settings by the
env's own state."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest
from PIL import Image

from common.env_client import DesktopEnvClient
from common.polling import wait_until
from tests.desktop_env.osworld_client import OSWorldClient
from tests.desktop_env.xinput import InputEvent, InputRecorder

SCREEN = (1920, 1080)
# Pointer actions aim right of x=70 and below y=32: GNOME Shell's dock and top bar take the input there above any
# window, override-redirect ones too (its stage is the compositor's overlay), as on OSWorld's VM.


def _buttons(events: list[InputEvent]) -> list[tuple[str, str]]:
    return [(e.kind, e.detail) for e in events if e.kind in ("press", "release")]


def _keys(events: list[InputEvent]) -> list[tuple[str, str]]:
    return [(e.kind, e.detail) for e in events if e.kind in ("key", "keyup")]


def test_screenshot_screen_size_platform_and_desktop_path(env: DesktopEnvClient, osworld: OSWorldClient) -> None:
    png = osworld.python("get_screenshot")
    assert Image.open(io.BytesIO(png)).size == SCREEN
    assert osworld.python("get_vm_screen_size") == {"width": 1920, "height": 1080}
    assert osworld.python("get_vm_platform") == "Linux"
    assert osworld.python("get_vm_desktop_path") == "/home/user/Desktop"


def test_files_and_directory_tree(env: DesktopEnvClient, osworld: OSWorldClient, home: Path) -> None:
    env.upload_file("/home/user/Desktop/a.txt", b"alpha")
    env.upload_file("/home/user/Desktop/sub/b.txt", b"beta")
    assert osworld.python("get_file", "/home/user/Desktop/a.txt") == b"alpha"
    assert osworld.python("get_file", "/home/user/Desktop/missing.txt") is None  # 404, retried, then None
    tree = osworld.python("get_vm_directory_tree", "/home/user/Desktop")
    assert tree["name"] == "Desktop"
    assert sorted(c["name"] for c in tree["children"]) == ["a.txt", "sub"]
    assert osworld.python("get_vm_directory_tree", "/home/user/nope") is None  # 400, then None


def test_terminal_and_accessibility(env: DesktopEnvClient, osworld: OSWorldClient) -> None:
    assert osworld.python("get_terminal_output") is None
    env.execute(["python", "-c", "import pyautogui; pyautogui.hotkey('ctrl', 'alt', 't')"])
    assert env.activate_window("Terminal", timeout_s=10)
    osworld.python("execute_action", {"action_type": "TYPING", "text": "echo osworld-$((40+2))\n"})
    wait_until(lambda: "osworld-42" in (osworld.python("get_terminal_output") or ""), 10, "terminal text")
    ElementTree.fromstring(osworld.python("get_accessibility_tree"))  # well-formed XML


def test_execute_python_command_and_run_python_script(env: DesktopEnvClient, osworld: OSWorldClient) -> None:
    reply = osworld.python("execute_python_command", "import os; print(os.getcwd())")
    assert reply == {"status": "success", "output": "/home/user\n", "error": "", "returncode": 0}
    ok = osworld.python("run_python_script", "import sys\nprint('out')\nprint('err', file=sys.stderr)")
    assert ok == {"status": "success", "message": "out\n\nerr\n", "need_more": False, "output": "out\n",
                  "error": "err\n", "return_code": 0}
    failed = osworld.python("run_python_script", "raise SystemExit(3)")
    assert (failed["status"], failed["return_code"], failed["error"]) == ("error", 3, "Process exited with code 3")
    crashed = osworld.python("run_python_script", "1/0")
    assert crashed["status"] == "error" and crashed["error"].endswith("ZeroDivisionError: division by zero\n")
    # An empty script is refused with 400; OSWorld's client reads the body's "error" key.
    refused = osworld.python("run_python_script", "")
    assert refused == {"status": "error", "message": "Failed to execute command.", "output": None,
                       "error": "Code not supplied!"}


def test_run_bash_script(env: DesktopEnvClient, osworld: OSWorldClient, home: Path) -> None:
    (home / "Documents" / "work").mkdir()
    reply = osworld.python("run_bash_script", "pwd; echo oops >&2; exit 4", 10, "/home/user/Documents/work")
    assert reply == {"status": "error", "output": "/home/user/Documents/work\noops\n", "error": "", "returncode": 4}
    assert osworld.python("run_bash_script", "echo fine")["status"] == "success"
    timed_out = osworld.python("run_bash_script", "sleep 30", 1)  # 500 each attempt, OSWorld retries 3 times
    assert timed_out["returncode"] == -1 and timed_out["status"] == "error"


def test_window_size_and_wallpaper(env: DesktopEnvClient, osworld: OSWorldClient) -> None:
    assert osworld.python("get_vm_window_size", "XTerm") is None
    env.launch(["xterm", "-geometry", "80x24", "-T", "sized"])
    assert env.activate_window("sized", timeout_s=10)
    size = osworld.python("get_vm_window_size", "xterm")  # WM_CLASS compared case-insensitively
    assert size is not None and set(size) == {"width", "height"} and 0 < size["width"] < SCREEN[0]
    default = osworld.python("get_vm_wallpaper")  # Ubuntu's default wallpaper, as on OSWorld's VM
    assert default is not None and Image.open(io.BytesIO(default)).size[0] > 0
    image = io.BytesIO()
    Image.new("RGB", (32, 16), "orange").save(image, "PNG")
    assert image.getvalue() != default
    env.upload_file("/home/user/Pictures/wall.png", image.getvalue())
    env.change_wallpaper("/home/user/Pictures/wall.png")
    assert osworld.python("get_vm_wallpaper") == image.getvalue()


def test_recording(env: DesktopEnvClient, osworld: OSWorldClient, tmp_path: Path) -> None:
    osworld.python("start_recording")
    env.execute(["python", "-c", "import pyautogui; pyautogui.moveTo(10, 10, duration=0.5)"])
    dest = tmp_path / "rec.mp4"
    osworld.python("end_recording", str(dest))
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height,codec_name",
                            "-of", "json", str(dest)], capture_output=True, text=True, timeout=30, check=True)
    assert json.loads(probe.stdout)["streams"] == [{"codec_name": "h264", "width": 1920, "height": 1080}]


def test_move_and_click_actions(env: DesktopEnvClient, osworld: OSWorldClient, display: str) -> None:
    with InputRecorder(display) as recorder:
        osworld.python("execute_action", {"action_type": "MOVE_TO", "parameters": {"x": 300, "y": 400}})
        assert env.cursor_position() == (300, 400)
        osworld.python("execute_action", {"action_type": "MOVE_TO", "parameters": {}})
        assert env.cursor_position() == (300, 400)
        osworld.python("execute_action", {"action_type": "CLICK", "x": 150, "y": 160})
        osworld.python("execute_action", {"action_type": "CLICK", "parameters": {"button": "right", "x": 170,
                                                                                  "y": 180, "num_clicks": 2}})
        osworld.python("execute_action", {"action_type": "CLICK", "parameters": {"button": "middle"}})
        osworld.python("execute_action", {"action_type": "CLICK", "parameters": {}})
        events = recorder.wait_for(10)
    assert _buttons(events) == [("press", "1"), ("release", "1"), ("press", "3"), ("release", "3"),
                                ("press", "3"), ("release", "3"), ("press", "2"), ("release", "2"),
                                ("press", "1"), ("release", "1")]
    assert (events[0].x, events[0].y, events[2].x, events[2].y, events[-1].x) == (150, 160, 170, 180, 170)


def test_button_actions(env: DesktopEnvClient, osworld: OSWorldClient, display: str) -> None:
    with InputRecorder(display) as recorder:
        osworld.python("execute_action", {"action_type": "RIGHT_CLICK", "parameters": {"x": 111, "y": 112}})
        osworld.python("execute_action", {"action_type": "DOUBLE_CLICK", "parameters": {"x": 113, "y": 114}})
        osworld.python("execute_action", {"action_type": "MOUSE_DOWN", "parameters": {"button": "left"}})
        osworld.python("execute_action", {"action_type": "MOUSE_UP", "parameters": {"button": "left"}})
        osworld.python("execute_action", {"action_type": "MOUSE_DOWN", "parameters": {}})
        osworld.python("execute_action", {"action_type": "MOUSE_UP", "parameters": {}})
        osworld.python("execute_action", {"action_type": "DRAG_TO", "parameters": {"x": 500, "y": 600}})
        events = recorder.wait_for(12)
    assert _buttons(events) == [("press", "3"), ("release", "3")] + [("press", "1"), ("release", "1")] * 5
    assert (events[2].x, events[2].y) == (113, 114)
    drag_press, drag_release = events[-2], events[-1]
    assert (drag_press.x, drag_press.y, drag_release.x, drag_release.y) == (113, 114, 500, 600)


def test_scroll_actions(env: DesktopEnvClient, osworld: OSWorldClient, display: str) -> None:
    with InputRecorder(display) as recorder:
        osworld.python("execute_action", {"action_type": "SCROLL", "parameters": {"dx": 2, "dy": -1}})
        osworld.python("execute_action", {"action_type": "SCROLL", "parameters": {"dy": 1}})
        osworld.python("execute_action", {"action_type": "SCROLL", "parameters": {"dx": -1}})
        events = recorder.wait_for(10)
    presses = [e.detail for e in events if e.kind == "press"]
    assert presses == ["7", "7", "5", "4", "6"]  # right x2, down, up, left (X buttons 4-7)


def test_keyboard_actions(env: DesktopEnvClient, osworld: OSWorldClient, display: str) -> None:
    with InputRecorder(display) as recorder:
        osworld.python("execute_action", {"action_type": "TYPING", "parameters": {"text": "hi"}})
        osworld.python("execute_action", {"action_type": "PRESS", "parameters": {"key": "enter"}})
        osworld.python("execute_action", {"action_type": "KEY_DOWN", "parameters": {"key": "shift"}})
        osworld.python("execute_action", {"action_type": "KEY_UP", "parameters": {"key": "shift"}})
        osworld.python("execute_action", {"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "a"]}})
        events = recorder.wait_for(12)
    assert _keys(events) == [("key", "h"), ("keyup", "h"), ("key", "i"), ("keyup", "i"),
                             ("key", "Return"), ("keyup", "Return"), ("key", "Shift_L"), ("keyup", "Shift_L"),
                             ("key", "Control_L"), ("key", "a"), ("keyup", "a"), ("keyup", "Control_L")]


@pytest.mark.parametrize("action", ["WAIT", "FAIL", "DONE", {"action_type": "WAIT"}, {"action_type": "DONE"}])
def test_control_actions_do_nothing(env: DesktopEnvClient, osworld: OSWorldClient, display: str,
                                    action: object) -> None:
    with InputRecorder(display) as recorder:
        assert osworld.python("execute_action", action) is None
        env.execute(["python", "-c", "import pyautogui; pyautogui.click(105, 105)"])  # a marker after the action
        events = recorder.wait_for(2)
    assert _buttons(events) == [("press", "1"), ("release", "1")]
