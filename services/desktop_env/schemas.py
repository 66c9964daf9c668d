"""Request and reply bodies of the env pod's JSON routes, in OSWorld's field names
(xlang-ai/OSWorld `desktop_env/server/main.py`). Unknown request fields are ignored, as there."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


# -- requests ------------------------------------------------------------------------------------
class CommandBody(_Body):
    """`/execute`, `/setup/execute`, `/setup/launch`: `command` as a list (argv) or a string (split
    like a shell unless `shell`); `timeout` in seconds (execute only; default
    `DESKTOP_EXECUTE_TIMEOUT_S`)."""

    command: list[str] | str = ""
    shell: bool = False
    timeout: float | None = Field(default=None, gt=0)


class Verification(_Body):
    """What `/setup/execute_with_verification` waits for: a window whose title contains
    `window_exists` (case-insensitive), and/or the shell command `command_success` exiting 0."""

    window_exists: str | None = None
    command_success: str | None = None


class VerifiedCommandBody(CommandBody):
    """`/setup/execute_with_verification`: the command, then `verification` polled every
    `check_interval` seconds for up to `max_wait_time` seconds."""

    verification: Verification = Field(default_factory=Verification)
    max_wait_time: float = Field(default=10.0, ge=0)
    check_interval: float = Field(default=1.0, gt=0)


class PathBody(_Body):
    """`/list_directory`, `/setup/change_wallpaper`: one path in the env (`~`, `$VARS`,
    `/home/user` resolved); None is answered 400 as OSWorld does."""

    path: str | None = None


class OpenFileBody(_Body):
    """`/setup/open_file`: a file (opened with its default application) or a program on PATH;
    waits for a window whose title contains `window_name` (default: the file name or its stem)
    for `timeout_seconds` (OSWorld's name) or `timeout` (ours), default 30 s."""

    path: str | None = None
    window_name: str | None = None
    timeout_seconds: float | None = Field(default=None, gt=0)
    timeout: float | None = Field(default=None, gt=0)


class DownloadBody(_Body):
    """`/setup/download_file`: fetch `url` into `path` in the env (parents created)."""

    url: str | None = None
    path: str | None = None


class WindowBody(_Body):
    """`/setup/activate_window`, `/setup/close_window`: `timeout` = seconds to wait for the window."""

    window_name: str | None = None
    strict: bool = False
    by_class: bool = False
    timeout: float = Field(default=5.0, ge=0)


class RunPythonBody(_Body):
    """`/run_python`: a Python script's text."""

    code: str | None = None


class BashScriptBody(_Body):
    """`/run_bash_script`: a bash script's text, run in `working_dir` (default the env's home) for
    at most `timeout` seconds (OSWorld's default 100)."""

    script: str | None = None
    timeout: float = Field(default=100.0, gt=0)
    working_dir: str | None = None


# -- replies -------------------------------------------------------------------------------------
class ExecuteReply(BaseModel):
    """`/execute` (OSWorld shape); see `commands.ExecOutcome`."""

    status: str
    output: str
    error: str
    returncode: int


class VerifiedExecuteReply(ExecuteReply):
    """`/setup/execute_with_verification`: `verification` "passed" / "failed" (absent when
    nothing was to verify); `wait_time` in seconds."""

    verification: str | None = None
    wait_time: float | None = None


class RunPythonReply(BaseModel):
    """`/run_python` (OSWorld shape): `message` = stdout and stderr combined; `return_code`."""

    status: str
    message: str
    need_more: bool = False
    output: str | None
    error: str
    return_code: int | None = None


class BashScriptReply(BaseModel):
    """`/run_bash_script` (OSWorld shape): stdout and stderr merged in `output`; `error` always ""
    (as OSWorld); `returncode` -1 when the script did not run to its end."""

    status: str
    output: str
    error: str = ""
    returncode: int


class StatusReply(BaseModel):
    """`{"status", "message"}` replies (recording, reset); `duration_ms` on `/reset`."""

    status: str
    message: str
    duration_ms: float | None = None


class ErrorReply(BaseModel):
    """Every error reply the server itself gives (4xx, and the 5xx of failures OSWorld also
    reports as 500): `error` repeats `message` because OSWorld's client reads `error`."""

    status: str = "error"
    message: str
    error: str


class ScreenSize(BaseModel):
    """`/screen_size`, `/window_size`: pixels."""

    width: int
    height: int


class WindowEntry(BaseModel):
    """One managed top-level window of `GET /windows` (not in OSWorld's protocol): X window id, title,
    WM class (`instance.Class`), owner pid (None when the app does not set `_NET_WM_PID`), the client
    area's position and size in screen pixels, whether it has the focus, its EWMH type (`normal`,
    `dialog`, `splash`, ...) and whether the window manager shows it maximised (or full screen)."""

    wid: int
    title: str
    wm_class: str
    pid: int | None
    x: int
    y: int
    width: int
    height: int
    active: bool
    kind: str
    maximized: bool


class DesktopPath(BaseModel):
    """`/desktop_path`: the Desktop folder, as OSWorld names it (`/home/user/Desktop`)."""

    desktop_path: str


class DirectoryTree(BaseModel):
    """`/list_directory`: `{"type": "directory", "name", "children": [...]}`."""

    directory_tree: dict[str, Any]


class TerminalReply(BaseModel):
    """`/terminal`: text of the focused terminal, None when none is open."""

    output: str | None
    status: str = "success"


class AccessibilityReply(BaseModel):
    """`/accessibility`: the accessibility tree as XML text."""

    AT: str
