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
    """Command lines of the live code-server and Chromium processes of the env whose home is `home`
    (its home in their arguments, or as their HOME)."""
    found = []
    for process in psutil.process_iter(["cmdline", "environ"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        ours = str(home) in cmdline or (process.info["environ"] or {}).get("HOME") == str(home)
        if ours and ("cua-code-server" in cmdline or "chromium" in cmdline):
            found.append(cmdline)
    return found


def test_vscode_as_osworlds_tasks_drive_it(env: DesktopEnvClient, home: Path, display: str, tmp_path: Path) -> None:
    """One VS Code start (a cold one costs 10-40 s here) through what the vs_code tasks use."""
    extension = write_open_project_vsix(home / "eval-0.0.1.vsix")
    # vs_code/53ad5833's setup: a relative .vsix path, in a shell, before any window
    installed = env.execute("cd ~ && code --install-extension eval-0.0.1.vsix", shell=True)
    assert installed.returncode == 0, installed.output
    listed = env.execute(["code", "--list-extensions", "|", "grep", extension])  # OSWorld's getter, verbatim
    assert extension in (listed.output or "")
    assert (home / ".vscode" / "extensions").is_dir()
    assert (env.execute(["code", "--version"]).output or "").splitlines()[0] == "1.139.1"

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

    # a later `code -g FILE:LINE:COL` opens the file in the same window and raises it
    (home / "project" / "notes.txt").write_text("hello text\n")
    assert env.execute(["code", "-g", "/home/user/project/notes.txt:2:1"]).returncode == 0
    assert env.activate_window("notes.txt - project - Visual Studio Code", timeout_s=60)
    assert len([w for w in x11.list_windows(display) if "Visual Studio Code" in w.title]) == 1
    env.execute(["xdotool", "type", "--delay", "50", "more"])  # at line 2, where --goto put the cursor
    _keys(env, "ctrl+s")
    wait_until(lambda: (home / "project" / "notes.txt").read_text() == "hello text\nmore", 30, "the saved edit")

    # vs_code/982d12a5: the theme picker writes the user's settings.json, which holds only that key
    settings = home / ".config" / "Code" / "User" / "settings.json"

    def choose_theme() -> object:  # keys typed while the picker opens may be lost: the whole pick is retried
        _keys(env, "Escape", "ctrl+k", "ctrl+t")
        env.execute(["xdotool", "type", "--delay", "50", "Dark (Visual Studio)"])
        _keys(env, "Return")
        return settings.exists() and json.loads(settings.read_text())

    assert wait_until(choose_theme, 60, "the theme in settings.json", interval_s=2.0) == {
        "workbench.colorTheme": "Visual Studio Dark"}
    assert not [c for c in _env_processes(home) if "agentHost" in c]  # chat.disableAIFeatures

    assert _env_processes(home)
    env.reset()
    assert _env_processes(home) == []
    assert not [w for w in x11.list_windows(display) if "Visual Studio Code" in w.title]
