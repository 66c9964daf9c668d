"""The env pod on real Xvfb desktops: two envs started by `LocalEnvLauncher`, driven through
`DesktopEnvClient` (OSWorld VM server protocol). No fixed sleeps: every wait polls with a deadline.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from common.env_client import DesktopEnvClient
from common.polling import wait_until
from services.cli import standin_office
from services.cli.standin_formats import Seed
from services.desktop_env.homemap import HomeMapper
from services.desktop_env.launcher import LocalEnvLauncher
from services.desktop_env.processes import is_alive
from services.desktop_env.terminal import render
from tests.servers import env_clients

OPEN_TERMINAL = ["python", "-c", "import pyautogui; pyautogui.click(960, 540); pyautogui.hotkey('ctrl', 'alt', 't')"]


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEnvLauncher]:
    with LocalEnvLauncher(count=2, root_dir=tmp_path_factory.mktemp("envs")) as started:
        yield started


@pytest.fixture(scope="module")
def clients(launcher: LocalEnvLauncher) -> Iterator[list[DesktopEnvClient]]:
    with env_clients(launcher.urls) as envs:
        yield envs


@pytest.fixture()
def env1(clients: list[DesktopEnvClient]) -> DesktopEnvClient:
    """Env 1, freshly reset (every test starts from a clean desktop)."""
    clients[0].reset()
    return clients[0]


@pytest.fixture()
def env2(clients: list[DesktopEnvClient]) -> DesktopEnvClient:
    """Env 2, freshly reset."""
    clients[1].reset()
    return clients[1]


def _window_titles(env: DesktopEnvClient) -> str:
    return env.execute(["wmctrl", "-l"]).output or ""


def _open_terminal(env: DesktopEnvClient) -> None:
    assert env.execute(OPEN_TERMINAL).returncode == 0
    wait_until(lambda: "Terminal" in _window_titles(env), 10, "a Terminal window")


def test_screenshot_is_a_full_screen_png_with_content(env1: DesktopEnvClient) -> None:
    png = env1.screenshot()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert Image.open(io.BytesIO(png)).size == (1920, 1080)
    _open_terminal(env1)
    image = Image.open(io.BytesIO(env1.screenshot())).convert("RGB")
    assert len(image.getcolors(maxcolors=1 << 20) or []) > 2  # not one flat colour (cursor alone is 2)


def test_ctrl_alt_t_opens_a_terminal_whose_text_is_readable(env1: DesktopEnvClient) -> None:
    _open_terminal(env1)
    assert env1.activate_window("Terminal")
    typed = env1.execute(["python", "-c", "import pyautogui; pyautogui.write('echo hello-$((6*7))'); "
                          "pyautogui.press('enter')"])
    assert typed.returncode == 0
    wait_until(lambda: "hello-42" in env1.terminal(), 10, "command output in the terminal")
    assert "echo hello-$((6*7))" in env1.terminal()


def test_activate_and_close_window(env1: DesktopEnvClient) -> None:
    assert not env1.activate_window("no-such-window", timeout_s=0.2)
    _open_terminal(env1)
    assert env1.activate_window("terminal")  # case-insensitive substring, like wmctrl -a
    assert not env1.activate_window("terminal", strict=True, timeout_s=0.2)
    assert env1.activate_window("xterm", by_class=True)
    assert env1.close_window("Terminal")
    wait_until(lambda: "Terminal" not in _window_titles(env1), 5, "the terminal to close")


def test_sudo_mkdir_lands_in_this_envs_home_only(
    launcher: LocalEnvLauncher, env1: DesktopEnvClient, env2: DesktopEnvClient
) -> None:
    result = env1.execute("echo password | sudo -S mkdir ~/Desktop/x", shell=True)
    assert (result.status, result.returncode) == ("success", 0), result
    assert (launcher.home(0) / "Desktop" / "x").is_dir()
    assert not (launcher.home(1) / "Desktop" / "x").exists()
    tree = env1.list_directory("/home/user/Desktop")
    assert tree is not None and [c["name"] for c in tree["children"]] == ["x"]
    assert env2.list_directory("/home/user/Desktop") == {"type": "directory", "name": "Desktop", "children": []}


def test_home_user_is_mapped_to_the_envs_home(launcher: LocalEnvLauncher, env1: DesktopEnvClient) -> None:
    written = env1.execute(["/bin/bash", "-c", "echo hi > /home/user/Documents/f.txt && cd ~ && pwd && echo $HOME"])
    assert written.output == "/home/user\n/home/user\n"  # the env's real home is shown as OSWorld's
    assert (launcher.home(0) / "Documents" / "f.txt").read_text() == "hi\n"
    assert env1.get_file("/home/user/Documents/f.txt") == b"hi\n"
    assert env1.execute(["ls", "~/Documents"]).output == "f.txt\n"  # argv `~/` expanded, as OSWorld does
    assert env1.list_directory("/home/user/nope") is None


def test_upload_and_file_round_trip(launcher: LocalEnvLauncher, env1: DesktopEnvClient) -> None:
    payload = bytes(range(256)) * 100
    env1.upload_file("/home/user/Downloads/sub/blob.bin", payload)
    assert (launcher.home(0) / "Downloads" / "sub" / "blob.bin").read_bytes() == payload
    assert env1.get_file("/home/user/Downloads/sub/blob.bin") == payload
    env1.upload_file("relative.txt", b"rel")  # relative paths are taken from the home (OSWorld's cwd)
    assert env1.get_file("~/relative.txt") == b"rel"


def test_missing_file_is_404(env1: DesktopEnvClient) -> None:
    assert env1.get_file("/home/user/does-not-exist.txt") is None
    response = httpx.post(f"{env1.base_url}/file", data={"file_path": "/nope/x"}, timeout=10)
    assert response.status_code == 404


def test_nonzero_returncode_is_a_normal_reply(env1: DesktopEnvClient) -> None:
    response = httpx.post(f"{env1.base_url}/execute", json={"command": "echo out; echo err >&2; exit 3",
                                                            "shell": True}, timeout=30)
    assert response.status_code == 200
    assert response.json() == {"status": "success", "output": "out\n", "error": "err\n", "returncode": 3}
    missing = env1.execute(["definitely-not-a-command"])
    assert (missing.status, missing.returncode) == ("error", 127)
    timed_out = env1.execute("sleep 30", shell=True, timeout_s=0.5)
    assert (timed_out.status, timed_out.returncode) == ("error", 124)


def test_pyautogui_runs_in_a_fresh_forked_process_per_action(env1: DesktopEnvClient) -> None:
    moved = env1.execute(["python", "-c", "import pyautogui, os; pyautogui.moveTo(100, 200); "
                          "print(pyautogui.position(), os.getpid(), os.getppid())"])
    assert moved.returncode == 0, moved
    assert env1.cursor_position() == (100, 200)
    again = env1.execute(["python3", "-c", "import pyautogui, os; print(pyautogui.FAILSAFE, pyautogui.PAUSE, "
                          "pyautogui.screenshot().size, os.getpid(), os.getppid())"])
    assert again.output is not None and again.output.startswith("False 0 (1920, 1080)")
    first_pid, zygote_pid = (moved.output or "").split()[-2:]
    second_pid, same_zygote = again.output.split()[-2:]
    assert first_pid != second_pid and zygote_pid == same_zygote  # two processes forked by one zygote
    failed = env1.execute(["python", "-c", "import pyautogui\n1 / 0"])
    assert failed.returncode == 1
    assert failed.error == 'Traceback (most recent call last):\n  File "<string>", line 2, in <module>\n' \
                           "ZeroDivisionError: division by zero\n"  # exactly what `python -c` prints
    plain = env1.execute(["python", "-c", "import os; print(os.getppid())"])
    assert plain.returncode == 0 and plain.output == f"{zygote_pid}\n"  # every `python -c` is forked


def test_setup_launch_and_open_file(env1: DesktopEnvClient) -> None:
    env1.launch(["xterm", "-T", "Launched"])
    wait_until(lambda: "Launched" in _window_titles(env1), 10, "the launched xterm")
    env1.upload_file("/home/user/Desktop/notes.txt", b"notes\n")
    env1.open_file("/home/user/Desktop/notes.txt")
    assert "notes.txt" in _window_titles(env1)


def test_open_file_shows_a_pdf_in_the_document_viewer(env1: DesktopEnvClient) -> None:
    """As on OSWorld's Ubuntu VM (five OSWorld tasks `open` a PDF), Evince shows it, titled "<file> — <document
    title>", which is what `open_file` waits for; GIMP had taken PDFs and opened its import dialog."""
    env1.upload_file("/home/user/Desktop/lecture.pdf", standin_office.pdf(Seed("0" * 64)))
    env1.open_file("/home/user/Desktop/lecture.pdf")
    listing = env1.execute(["wmctrl", "-lx"]).output or ""
    (line,) = [line for line in listing.splitlines() if "lecture.pdf" in line]
    assert "evince" in line.lower() and "lecture.pdf — " in line


def test_open_file_shows_text_in_gedit_and_a_folder_in_nautilus(env1: DesktopEnvClient) -> None:
    """Ubuntu 22.04's apps, as on OSWorld's VM: gedit for text, titled "<file> (<folder>) - gedit" (OSWorld's
    multi_apps/d1acdb87 activates "restaurants.txt (~/Desktop) - gedit" strictly), Nautilus for a folder
    (multi_apps/881deb30 opens one); Mousepad and PCManFM had them."""
    env1.upload_file("/home/user/Desktop/restaurants.txt", b"Tim Ho Wan\nMak's Noodle\n")
    env1.open_file("/home/user/Desktop/restaurants.txt")
    assert env1.activate_window("restaurants.txt (~/Desktop) - gedit", strict=True)
    env1.execute(["mkdir", "-p", "/home/user/Documents/Fundings"])
    env1.open_file("/home/user/Documents/Fundings")
    listing = env1.execute(["wmctrl", "-lx"]).output or ""
    (line,) = [line for line in listing.splitlines() if "Fundings" in line]
    assert "org.gnome.nautilus" in line.lower()


def test_small_endpoints(env1: DesktopEnvClient) -> None:
    assert env1.screen_size() == (1920, 1080)
    assert env1.platform() == "Linux"
    x, y = env1.cursor_position()
    assert 0 <= x < 1920 and 0 <= y < 1080
    _open_terminal(env1)
    assert 'name="Terminal"' in env1.accessibility()
    assert env1.healthy()
    metrics = httpx.get(f"{env1.base_url}/metrics", timeout=10).text
    assert "desktop_env_execute_seconds" in metrics


def test_reset_removes_files_and_windows(launcher: LocalEnvLauncher, clients: list[DesktopEnvClient]) -> None:
    env = clients[1]
    _open_terminal(env)
    env.execute("touch ~/Desktop/left-over && (sleep 3217 &)", shell=True)
    env.reset()
    assert _window_titles(env) == ""
    assert not (launcher.home(1) / "Desktop" / "left-over").exists()
    assert (launcher.home(1) / "Desktop").is_dir() and (launcher.home(1) / "Downloads").is_dir()
    assert "sleep 3217" not in (env.execute(["ps", "-eo", "args"]).output or "")
    assert env.terminal() == ""


def test_launcher_stops_everything_it_started(tmp_path: Path) -> None:
    # Unsandboxed: the X lock file is on the host (tests/sandbox/ checks the sandboxed case).
    with LocalEnvLauncher(count=1, root_dir=tmp_path, sandbox=False) as one:
        display = int(one.displays[0][1:])
        xvfb_pid = int(Path(f"/tmp/.X{display}-lock").read_text().strip())
        assert DesktopEnvClient(one.urls[0]).healthy()
    assert not is_alive(xvfb_pid)
    assert not Path(f"/tmp/.X11-unix/X{display}").exists()


def test_terminal_render_interprets_line_editing() -> None:
    log = b"$ abcd\x08\x1b[K\x08Xc\x08\r\nout\r\n\x1b]0;title\x07$ \x1b[H\x1b[2Jafter clear\r\n$ "
    assert render(log) == "after clear\n$"
    assert render(b"$ vim\r\n\x1b[?1049hFULLSCREEN\x1b[?1049l$ done") == "$ vim\n$ done"


def test_home_mapper_rewrites_whole_path_components() -> None:
    mapper = HomeMapper(Path("/tmp/env-0/home"))
    assert mapper.to_env("cd /home/user/x && ls /home/username /home/user") == \
        "cd /tmp/env-0/home/x && ls /home/username /tmp/env-0/home"
    assert mapper.to_osworld("/tmp/env-0/home/Desktop") == "/home/user/Desktop"
    assert mapper.resolve("~/a", {}) == Path("/tmp/env-0/home/a")
    assert mapper.resolve("rel/b") == Path("/tmp/env-0/home/rel/b")
    assert mapper.resolve("$HOME/c", {"HOME": "/tmp/env-0/home"}) == Path("/tmp/env-0/home/c")
    assert not HomeMapper(Path("/home/user")).active
