"""The env's VS Code (code-server in a Chromium app window, `code` shim) in a real env, driven as
OSWorld's vs_code tasks drive it: `code PATH` launched, `activate_window("... - Visual Studio Code")`,
keystrokes, `~/.config/Code/User/settings.json` read back, an extension installed from a `.vsix`
and run through the `vscode_config` getter, and `/reset` leaving nothing running."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from common.code_server import vscode_available
from common.env_client import DesktopEnvClient
from common.polling import wait_until
from services.desktop_env import x11
from services.runner.osworld.context import EvalContext, SetupContext
from services.runner.osworld.getters.vscode import get_vscode_config
from tests.desktop_env.vsix import write_open_project_vsix

#: A cold VS Code (code-server, a fresh browser profile, the workbench's first load) on a loaded 2-core
#: machine takes 10-40 s to show its first editor.
WINDOW_TIMEOUT_S = 120.0



@pytest.fixture(autouse=True)
def _vscode_installed() -> None:
    """scripts/setup.sh installs it (scripts/install_code_server.sh): its absence is a failure."""
    assert vscode_available(), "VS Code missing: run scripts/install_code_server.sh (scripts/setup.sh does)"


def _started(home: Path) -> None:
    """Wait until VS Code's extension host has started its extensions: before, VS Code queues saves
    (its save participants run there), so a cold window's first save lands only then."""
    logs = home / ".config" / "Code" / "logs"

    def started() -> bool:
        return any("Eager extensions activated" in log.read_text(errors="replace")
                   for log in logs.glob("*/exthost*/remoteexthost.log"))

    wait_until(started, WINDOW_TIMEOUT_S, "VS Code's extensions to start", interval_s=0.5)


def _keys(env: DesktopEnvClient, *keys: str) -> None:
    env.execute(["xdotool", "key", "--delay", "50", *keys])


def _env_processes(home: Path) -> list[str]:
    """Command lines of live processes that belong to the env's VS Code (its home in their arguments)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if str(home) in cmdline and ("code-server" in cmdline or "--user-data-dir" in cmdline):
            found.append(cmdline)
    return found


def test_code_opens_a_file_edits_save_settings_and_reset_stops_it(env: DesktopEnvClient, home: Path,
                                                                   display: str) -> None:
    (home / "Desktop" / "notes.txt").write_text("hello text\n")
    env.launch(["code", "/home/user/Desktop/notes.txt"])  # vs_code/0ed39f63's setup
    assert env.activate_window("notes.txt - Visual Studio Code", timeout_s=WINDOW_TIMEOUT_S)
    _started(home)
    _keys(env, "ctrl+End")
    env.execute(["xdotool", "type", "--delay", "50", "more"])
    _keys(env, "ctrl+s")
    wait_until(lambda: (home / "Desktop" / "notes.txt").read_text() == "hello text\nmore", 30, "the saved edit")

    # vs_code/982d12a5: the theme picker writes the user's settings.json, which holds only that key
    _keys(env, "ctrl+k", "ctrl+t")
    env.execute(["xdotool", "type", "--delay", "50", "Dark (Visual Studio)"])
    _keys(env, "Return")
    settings = home / ".config" / "Code" / "User" / "settings.json"
    wait_until(lambda: settings.exists() and json.loads(settings.read_text()), 30, "settings.json")
    assert json.loads(settings.read_text()) == {"workbench.colorTheme": "Visual Studio Dark"}

    # a second `code FILE` opens in the same window (no new window) and raises it
    (home / "second.py").write_text("x = 1\n")
    assert env.execute(["code", "-g", "/home/user/second.py:1:3"]).returncode == 0
    wait_until(lambda: any(w.title == "second.py - Visual Studio Code" for w in x11.list_windows(display)), 60,
               "second.py in the window")
    assert len([w for w in x11.list_windows(display) if "Visual Studio Code" in w.title]) == 1
    assert not [c for c in _env_processes(home) if "agentHost" in c]  # chat.disableAIFeatures

    assert _env_processes(home)
    env.reset()
    assert _env_processes(home) == []
    assert not [w for w in x11.list_windows(display) if "Visual Studio Code" in w.title]


def test_extension_from_vsix_and_the_vscode_config_getter(env: DesktopEnvClient, home: Path,
                                                          tmp_path: Path) -> None:
    extension = write_open_project_vsix(home / "eval-0.0.1.vsix")
    # vs_code/53ad5833's setup: a relative .vsix path, in a shell, no window yet
    installed = env.execute("cd ~ && code --install-extension eval-0.0.1.vsix", shell=True)
    assert installed.returncode == 0, installed.output
    listed = env.execute(["code", "--list-extensions", "|", "grep", extension])  # OSWorld's getter, verbatim
    assert extension in (listed.output or "")
    assert (home / ".vscode" / "extensions").is_dir()

    (home / "project").mkdir()
    env.launch(["code", "/home/user/project"])
    assert env.activate_window("project - Visual Studio Code", timeout_s=WINDOW_TIMEOUT_S)
    _started(home)
    ctx = EvalContext(setup=SetupContext(client_password="password", screen=(1920, 1080), cache_dir=tmp_path),
                      cache_dir=tmp_path, work_dir=tmp_path)
    config = {"vscode_extension_command": "OpenProject", "path": "/home/user/OpenProject.txt", "dest": "p.txt"}

    def project_name() -> str | None:  # the first run also activates the extension: retried
        fetched = get_vscode_config(env, config, ctx)
        return Path(fetched).read_text() if isinstance(fetched, str) else None

    assert wait_until(project_name, 90, "OpenProject.txt", interval_s=2.0) == "project"
    version = env.execute(["code", "--version"]).output or ""
    assert version.splitlines()[0] == "1.139.1"
