"""Tests of the gimp, vlc and vscode getters (`services/runner/osworld/getters/{gimp,vlc,vscode}.py`)
and of the real tasks that use them, scored end to end by `evaluate()`.

- `default_video_player`: ours (through the real `DesktopEnvClient`) and OSWorld's own getter (in
  the oracle) both query the real `xdg-mime` over HTTP, through a stand-in of the env server's
  `/execute` (the env's own `CommandRunner`, without a desktop) whose environment holds an isolated
  XDG configuration; they must return the same value.
- `gimp_config_file`, `vlc_config`, `vscode_config`: OSWorld's versions drive its `PythonController`
  (not available to the oracle), so these run against the `FakeEnv` double; the `python -c` command
  they send is also run here to show it prints the expanded path.
- `vlc_playing_info` is compared with OSWorld's getter on a real VLC in `test_vlc.py`.
"""

from __future__ import annotations

import ast
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from pydantic import BaseModel

from common.env_client import DesktopEnvClient
from common.task import OSWorldTask, load_task_file
from services.desktop_env.commands import CommandRunner, normalize
from services.desktop_env.processes import ChildRegistry
from services.runner.osworld import EvalContext, EvalError, evaluate, get_state
from services.runner.osworld.getters.vlc import VIDEO_TYPES
from tests.oracle.client import Oracle
from tests.oracle.osworld_index import OSWORLD, getter_uses
from tests.runner.osworld.test_setup import FakeEnv, FakeResult, make_ctx
from tests.servers import serve_app


def eval_ctx(tmp_path: Path, **setup: Any) -> EvalContext:
    return EvalContext(setup=make_ctx(tmp_path, **setup), cache_dir=tmp_path / "cache", work_dir=tmp_path / "work")


def real_task(name: str) -> OSWorldTask:
    return load_task_file(OSWORLD / "examples" / f"{name}.json")


def expand_locally(code: str, home: str) -> str:
    """Run a getter's `python -c` expansion code here with HOME=`home`; returns what it prints."""
    done = subprocess.run(["python3", "-c", code], env={**os.environ, "HOME": home}, capture_output=True, text=True,
                          check=True)
    return done.stdout


def home_reply(home: str, **overrides: FakeResult) -> Any:
    """A FakeEnv reply that answers the getters' `python -c "...expanduser('~/...')"` like an env
    whose user's home is `home` (the `~` replaced in-process; `expand_locally` runs the real command
    once in `test_the_expansion_command_prints_the_users_path`), and `overrides` by program."""

    def reply(command: list[str] | str, shell: bool) -> FakeResult:
        if isinstance(command, list) and command[:2] == ["python", "-c"] and "expanduser(" in command[2]:
            argument = ast.literal_eval(command[2].split("expanduser(", 1)[1].rsplit("))", 1)[0])
            return FakeResult(output=argument.replace("~", home, 1) + "\n")
        program = command[0] if isinstance(command, list) else command.split()[0]
        return overrides.get(program, FakeResult())

    return reply


# --- default_video_player: ours and OSWorld's against the same env /execute -----------------------


class _Command(BaseModel):
    command: list[str] | str
    shell: bool = False


def execute_app(home: Path, env: dict[str, str]) -> FastAPI:
    """Stand-in of the env server for `/execute` only (the env's own CommandRunner and argument
    rules, OSWorld's reply shape), so both getters can query a real `xdg-mime` without a desktop."""
    runner = CommandRunner(env, home, ChildRegistry())
    app = FastAPI()

    @app.post("/execute")
    def execute(body: _Command) -> dict[str, object]:
        return runner.run(normalize(body.command, body.shell), body.shell, 60).as_json()

    return app


def _desktop_file(path: Path, name: str, exec_line: str) -> None:
    """A desktop entry without MimeType, so xdg-mime's fallback (entries claiming a type) never answers."""
    path.write_text(f"[Desktop Entry]\nType=Application\nName={name}\nExec={exec_line}\n")


@contextmanager
def xdg_env(tmp: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """An env home whose XDG data dirs hold only vlc.desktop and a Totem stand-in (no system
    mimeinfo.cache), so `xdg-mime` answers from the home's mimeapps.list alone. A desktop name
    xdg-mime knows (LXDE: its generic lookup) spares it probing D-Bus and X on every call."""
    home, share = tmp / "home", tmp / "share"
    (home / ".config").mkdir(parents=True)
    (share / "applications").mkdir(parents=True)
    _desktop_file(share / "applications" / "vlc.desktop", "VLC media player", "/usr/bin/vlc --started-from-file %U")
    # Totem is not installed here: its entry runs `true`, a binary that exists, as xdg-mime requires
    _desktop_file(share / "applications" / "org.gnome.Totem.desktop", "Videos", "true %U")
    env = {"HOME": str(home), "XDG_CURRENT_DESKTOP": "LXDE", "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_DATA_HOME": str(home / ".local/share"), "XDG_DATA_DIRS": str(share),
           "XDG_CONFIG_DIRS": str(tmp / "etc"), "PATH": os.environ["PATH"]}
    yield home, env


def set_default(env: dict[str, str], desktop: str, kinds: list[str]) -> None:
    """What the agent does: `xdg-mime default <desktop> video/<kind>...` in the env."""
    subprocess.run(["xdg-mime", "default", desktop, *(f"video/{k}" for k in kinds)], env=env, check=True,
                   capture_output=True, timeout=60)


SCENARIOS = {
    # name: ([(desktop file, video types it becomes the default of)], expected value, reward or None)
    "VLC for every video type": ([("vlc.desktop", list(dict.fromkeys(VIDEO_TYPES)))], "vlc.desktop\n", 1.0),
    "a tie: the first type asked wins": ([("vlc.desktop", ["3gp"]), ("org.gnome.Totem.desktop", ["mp4"])],
                                         "vlc.desktop\n", None),
    "Totem for every video type": ([("org.gnome.Totem.desktop", list(dict.fromkeys(VIDEO_TYPES)))], None, 0.0),
    "no default at all": ([], None, 0.0),
}
"""OSWorld's getter sends one /execute per type (89, each a slow xdg-mime): the scenarios with an
expected value are compared with it, those with a reward are scored by `evaluate()` on the task."""


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_default_video_player(oracle: Oracle, tmp_path: Path, scenario: str) -> None:
    """multi_apps/937087b6 ("set the default video player as VLC")."""
    ((task_name, config),) = getter_uses("default_video_player")
    defaults, value, reward = SCENARIOS[scenario]
    with xdg_env(tmp_path) as (home, env):
        for desktop, kinds in defaults:
            set_default(env, desktop, kinds)
        with serve_app(execute_app(home, env)) as url:
            client = DesktopEnvClient(url)
            if value is not None:
                ours = get_state(client, config, eval_ctx(tmp_path))
                port = int(url.rsplit(":", 1)[1])
                theirs = oracle.call("getters.vlc", "get_default_video_player", config,
                                     env={"vm_platform": "Linux", "vm_ip": "127.0.0.1", "server_port": port})
                assert theirs.ok, theirs.error
                assert ours == theirs.value == value
            if reward is not None:
                assert evaluate(real_task(task_name).evaluator, client, eval_ctx(tmp_path), "DONE") == reward


def test_default_video_player_when_the_env_cannot_run_it(tmp_path: Path) -> None:
    env = FakeEnv(reply=lambda c, s: FakeResult(status="error", returncode=127))
    assert get_state(env, {"type": "default_video_player"}, eval_ctx(tmp_path)) == "unknown"
    ((command, ), kwargs), = env.named("execute")
    assert kwargs == {"shell": True} and command.count("xdg-mime query default video/") == len(set(VIDEO_TYPES))


# --- config files through FakeEnv -------------------------------------------------------------------


def test_the_expansion_command_prints_the_users_path(tmp_path: Path) -> None:
    env = FakeEnv(reply=home_reply("/home/user"), files={"/home/user/.config/vlc/vlcrc": b"qt-bgcone=0\n"})
    path = get_state(env, {"type": "vlc_config", "dest": "vlcrc"}, eval_ctx(tmp_path))
    assert Path(path).read_bytes() == b"qt-bgcone=0\n" and Path(path).name == "vlcrc"
    ((command,), _), = env.named("execute")
    assert command == ["python", "-c", "import os; print(os.path.expanduser('~/.config/vlc/vlcrc'))"]
    assert expand_locally(command[2], "/home/user") == "/home/user/.config/vlc/vlcrc\n"
    assert [args for args, _ in env.named("get_file")] == [("/home/user/.config/vlc/vlcrc",)]


VLC_CONFIG_TASKS = sorted({task for task, _ in getter_uses("vlc_config")})
RIGHT_VLCRC = {
    "vlc/215dfd39-f493-4bc3-a027-8a97d72c61bf": "qt-bgcone=0",
    "vlc/386dbd0e-0241-4a0a-b6a2-6704fba26b1c": "global-key-play-pause=Ctrl+Alt+P",
    "vlc/8ba5ae7a-5ae5-4eab-9fcc-5dd4fe3abf89": "input-record-path=/home/user/Desktop",
    "vlc/9195653c-f4aa-453d-aa95-787f6ccfaae9": "qt-max-volume=200",
    "vlc/a5bbbcd5-b398-4c91-83d4-55e1e31bbb81": "qt-minimal-view=1",
    "vlc/d06f0d4d-2cd5-4ede-8de9-598629438c6e": "qt-slider-colours=0;0;0;20;20;20;40;40;40;60;60;60",
    "vlc/f3977615-2b45-4ac5-8bba-80c17dbe2a37": "one-instance-when-started-from-file=0",
}
DEFAULT_VLCRC = """###
###  vlc 3.0.24
###
[qt] # Qt interface
#qt-minimal-view=0
#qt-bgcone=1
#qt-max-volume=125
#qt-slider-colours=153;210;153;20;210;20;255;199;15;245;39;29
[core] # core program
#input-record-path=
#one-instance-when-started-from-file=1
#global-key-play-pause=
"""


@pytest.mark.parametrize("name", VLC_CONFIG_TASKS)
def test_vlc_config_tasks_end_to_end(tmp_path: Path, name: str) -> None:
    """The task's evaluator, run by `evaluate()` on a FakeEnv holding the user's vlcrc."""
    task = real_task(name)
    path = "/home/user/.config/vlc/vlcrc"
    option = RIGHT_VLCRC[name].split("=")[0]
    right = DEFAULT_VLCRC.replace(next(line for line in DEFAULT_VLCRC.splitlines() if line.startswith(f"#{option}=")),
                                  RIGHT_VLCRC[name])
    for text, reward in ((right, 1.0), (DEFAULT_VLCRC, 0.0)):
        env = FakeEnv(reply=home_reply("/home/user"), files={path: text.encode()})
        assert evaluate(task.evaluator, env, eval_ctx(tmp_path), "DONE") == reward
    with pytest.raises(EvalError, match="does not exist in the env"):
        evaluate(task.evaluator, FakeEnv(reply=home_reply("/home/user")), eval_ctx(tmp_path), "DONE")


def test_vlc_config_needs_a_dest_and_a_working_env(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="'dest'"):
        get_state(FakeEnv(reply=home_reply("/home/user")), {"type": "vlc_config"}, eval_ctx(tmp_path))
    broken = FakeEnv(reply=lambda c, s: FakeResult(status="error", error="python: not found", returncode=127))
    with pytest.raises(EvalError, match="cannot expand '~/.config/vlc/vlcrc'"):
        get_state(broken, {"type": "vlc_config", "dest": "vlcrc"}, eval_ctx(tmp_path))


GIMP_TASKS = sorted({task for task, _ in getter_uses("gimp_config_file")})
GIMP_RIGHT = {"hide-docks": "(hide-docks yes)", "layer-new-name": '(layer-new-name "Square")',
              "undo-levels": "(undo-levels 100)", "theme": '(theme "Light")'}


@pytest.mark.parametrize("name", GIMP_TASKS)
def test_gimp_config_tasks_end_to_end(tmp_path: Path, name: str) -> None:
    """The task's evaluator (its postconfig quits GIMP with ctrl+q, so it writes its config) on a
    FakeEnv holding the config file."""
    task = real_task(name)
    getter = task.evaluator.result
    assert isinstance(getter, dict)
    rules = task.evaluator.expected["rules"]  # type: ignore[index]
    path = f"/home/user/.config/GIMP/2.10/{getter['file_name']}"
    right = f"# GIMP {getter['file_name']}\n\n(show-tips no)\n{GIMP_RIGHT[rules['key']]}\n\n# end\n"
    for files, reward in (({path: right.encode()}, 1.0), ({path: b"# GIMP\n(show-tips no)\n"}, 0.0),
                          ({path: b""}, 0.0), ({}, 0.0)):
        env = FakeEnv(reply=home_reply("/home/user"), files=files)
        assert evaluate(task.evaluator, env, eval_ctx(tmp_path), "DONE") == reward
        assert any("ctrl" in str(args) for args, _ in env.named("setup_execute"))  # the postconfig ran


def test_gimp_config_file_copies_into_the_work_dir(tmp_path: Path) -> None:
    env = FakeEnv(reply=home_reply("/root"), files={"/root/.config/GIMP/2.10/sessionrc": b"(hide-docks yes)\n"})
    local = get_state(env, {"type": "gimp_config_file", "file_name": "sessionrc", "dest": "sessionrc"},
                      eval_ctx(tmp_path))
    assert local == str(tmp_path / "work" / "sessionrc") and Path(local).read_text() == "(hide-docks yes)\n"
    with pytest.raises(EvalError, match="'file_name'"):
        get_state(env, {"type": "gimp_config_file", "dest": "x"}, eval_ctx(tmp_path))


# --- vscode_config --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted({task for task, _ in getter_uses("vscode_config")}))
def test_vscode_config_runs_the_command_then_reads_the_file(tmp_path: Path, name: str) -> None:
    task = real_task(name)
    sleeps: list[float] = []
    ctx = eval_ctx(tmp_path, sleep=sleeps.append)
    env = FakeEnv(files={"/home/user/OpenProject.txt": b"project"})
    getter = next(g for g in ([task.evaluator.result] if isinstance(task.evaluator.result, dict)
                              else task.evaluator.result or []) if g.get("type") == "vscode_config")
    local = get_state(env, getter, ctx)
    assert Path(local).read_text() == "project"
    calls = [args[0] for args, _ in env.named("execute")]
    assert [c[:2] for c in calls] == [["python", "-c"]] * 3
    assert "hotkey('ctrl', 'shift', 'p')" in calls[0][2] and "typewrite('OpenProject')" in calls[1][2]
    assert "press('enter')" in calls[2][2] and 1.0 in sleeps
    for call in calls:  # each keystroke is valid Python
        compile(call[2], "<vscode_config>", "exec")
    assert get_state(FakeEnv(), getter, ctx) is None  # the command wrote nothing


def test_vscode_open_project_task_end_to_end(tmp_path: Path) -> None:
    task = real_task("vs_code/53ad5833-3455-407b-bbc6-45b4c79ab8fb")
    for text, reward in ((b"project", 1.0), (b"Desktop", 0.0)):
        env = FakeEnv(files={"/home/user/OpenProject.txt": text})
        assert evaluate(task.evaluator, env, eval_ctx(tmp_path), "DONE") == reward
