"""The Ubuntu desktop (issue 33.3) on a real env running GNOME Shell: its top bar and dock drawn and in the
accessibility tree, every dock icon opening its app when clicked, a reset restoring what a task changed, and a
checked paste that GNOME Shell's clipboard manager alone reads still failing as an action error, the env's
commands in Ubuntu's GNOME session (its desktop names: `xdg-open` as on Ubuntu)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import ImageStat

from common.env_client import DesktopEnvClient
from common.pixels import is_drawn
from common.polling import wait_until
from services.desktop_env import shell
from services.desktop_env.launcher import LocalEnvLauncher
from services.desktop_env.ubuntu_defaults import UBUNTU_FAVORITES
from services.runner.agent.clipboard import paste_source
from services.runner.settle import decode


@pytest.fixture(scope="module")
def gnome_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DesktopEnvClient]:
    """One unsandboxed env with GNOME Shell (the suite's other envs are openbox ones: tests/conftest.py)."""
    assert shell.default_shell() == shell.GNOME, "GNOME Shell or dash-to-dock is not installed: run scripts/setup.sh"
    root: Path = tmp_path_factory.mktemp("gnome")
    with LocalEnvLauncher(count=1, root_dir=root, sandbox=False, shell=shell.GNOME) as launcher:
        client = DesktopEnvClient(launcher.urls[0])
        yield client
        client.close()


@pytest.fixture()
def env(gnome_env: DesktopEnvClient) -> DesktopEnvClient:
    """The GNOME env, freshly reset."""
    gnome_env.reset()
    return gnome_env

#: Dock button (accessible name) -> the WM classes (lower case) of the window it may open (the trash opens in
#: the default file manager of folders, Nautilus, `home.mimeapps_list`).
DOCK_APPS = {"Thunderbird": ("thunderbird",), "Files": ("nautilus",), "LibreOffice Writer": ("libreoffice",),
             "Trash": ("nautilus",)}
_BUTTON = re.compile(r'<push-button name="([^"]+)"[^>]*cp:screencoord="\((\d+), (\d+)\)" cp:size="\((\d+), (\d+)\)"')


def _dock_buttons(env: DesktopEnvClient) -> dict[str, tuple[int, int]]:
    """The dock's buttons by accessible name -> their centre (pixels), once GNOME Shell is on the AT-SPI bus."""
    def buttons() -> dict[str, tuple[int, int]] | None:
        found = {name: (int(x) + int(w) // 2, int(y) + int(h) // 2)
                 for name, x, y, w, h in _BUTTON.findall(env.accessibility()) if int(x) < 70}
        return found if set(DOCK_APPS) <= set(found) else None

    return wait_until(buttons, 60, "the dock's buttons in the accessibility tree", interval_s=1.0)


def test_the_top_bar_and_the_dock_are_drawn_and_in_the_accessibility_tree(env: DesktopEnvClient) -> None:
    screen = decode(env.screenshot())
    width, height = screen.size
    top_bar, dock = (0, 0, width, 32), (0, 32, 70, height)
    for box in (top_bar, dock):
        assert is_drawn(screen, box), box  # the clock, Activities, the icons
        assert ImageStat.Stat(screen.crop(box).convert("L")).median[0] < 60, box  # dark, as Ubuntu's
    # GNOME Shell joins the AT-SPI bus once the bus runs (the first tree request starts it)
    tree = wait_until(lambda: (lambda t: t if 'name="Activities"' in t else None)(env.accessibility()), 60,
                      "GNOME Shell in the accessibility tree", interval_s=1.0)
    assert 'name="System"' in tree
    assert set(_dock_buttons(env)) >= set(DOCK_APPS)


@pytest.mark.parametrize("button", sorted(DOCK_APPS))
def test_every_dock_icon_opens_its_app(env: DesktopEnvClient, button: str) -> None:
    x, y = _dock_buttons(env)[button]
    assert env.execute(["python", "-c", f"import pyautogui; pyautogui.click({x}, {y})"]).returncode == 0

    def opened() -> list[dict[str, Any]] | None:
        windows = [w for w in env.windows() or [] if any(app in w["wm_class"].lower() for app in DOCK_APPS[button])]
        return windows or None

    windows = wait_until(opened, 180, f"{button} to open from the dock", interval_s=1.0)
    assert windows[0]["kind"] == "normal"


def test_a_reset_puts_back_the_favourites_a_task_changed_and_closes_the_overview(env: DesktopEnvClient) -> None:
    script = ("gsettings set org.gnome.shell favorite-apps \"['mousepad.desktop']\"; gsettings set "
              "org.gnome.desktop.interface gtk-theme Adwaita; gsettings get org.gnome.shell favorite-apps")
    assert "mousepad" in (env.execute(script, shell=True).output or "")
    wait_until(lambda: "Thunderbird" not in _names(env), 30, "the dock to drop Thunderbird", interval_s=1.0)
    env.execute(["python", "-c", "import pyautogui; pyautogui.press('winleft')"])  # the overview opens
    env.reset()
    favourites = env.execute("gsettings get org.gnome.shell favorite-apps", shell=True).output or ""
    assert all(name in favourites for name in UBUNTU_FAVORITES)
    assert "Yaru" in (env.execute("gsettings get org.gnome.desktop.interface gtk-theme", shell=True).output or "")
    assert _dock_buttons(env)  # Thunderbird, Files and Writer are back in the dock
    overview = env.execute("dbus-send --session --print-reply --dest=org.gnome.Shell /org/gnome/Shell "
                           "org.freedesktop.DBus.Properties.Get string:org.gnome.Shell string:OverviewActive",
                           shell=True).output or ""
    assert "boolean false" in overview


def test_the_envs_commands_run_in_ubuntus_gnome_session_and_open_json_in_the_text_editor(env: DesktopEnvClient) -> None:
    """As on Ubuntu 22.04, where every process of the session has its desktop names, `xdg-open` (OSWorld's
    `open` setup) goes through `gio open`, which finds the text editor for JSON by its MIME parent (OSWorld's
    multi_apps/5bc63fb9 opens llm_answers.json); xdg-open's generic path, without them, took the browser."""
    names = env.execute("echo $XDG_CURRENT_DESKTOP $DESKTOP_SESSION", shell=True).output or ""
    assert names.split() == ["ubuntu:GNOME", "ubuntu"]
    env.upload_file("/home/user/Desktop/llm_answers.json", b'{"model": "x", "answer": 1}\n')
    env.open_file("/home/user/Desktop/llm_answers.json")
    (window,) = [w for w in env.windows() or [] if "llm_answers.json" in w["title"]]
    assert window["wm_class"].lower() == "gedit.gedit"


def _names(env: DesktopEnvClient) -> set[str]:
    return {name for name, *_ in _BUTTON.findall(env.accessibility())}


def test_a_paste_only_gnome_shell_reads_is_an_action_error(env: DesktopEnvClient) -> None:
    """No window is focused after a reset: mutter reads the new clipboard owner (its clipboard manager), which
    must not pass for the focused application reading the paste (services/runner/agent/clipboard.py)."""
    result = env.execute(["python", "-c", f"{paste_source()}\npaste_text('a<b', 1.0)"])
    assert result.returncode == 1, result
    assert "type: no application asked for the pasted text within 1 s" in (result.error or "")
