"""`DesktopEnvClient`: typed sync client of the OSWorld VM server protocol (xlang-ai/OSWorld
`desktop_env/server/main.py`), spoken by our env pod (`services.desktop_env`) and by real OSWorld VMs.

Every request has an explicit timeout. Transport failures, 5xx replies and unexpected 4xx replies
raise `EnvError` naming the endpoint; "not found" responses that the protocol defines (a missing file,
no such window, not a directory) come back as None / False instead.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from common.httpclient import HttpClient, HttpError, HttpResponse, send, shared

log = logging.getLogger(__name__)

DEFAULT_EXECUTE_TIMEOUT_S = 120.0  # the OSWorld server's own command timeout
_MARGIN_S = 15.0  # HTTP timeout beyond the server-side timeout of a request


class EnvError(RuntimeError):
    """A desktop env request failed: transport error (`status_code` None) or an error reply."""

    def __init__(self, endpoint: str, message: str, status_code: int | None = None) -> None:
        super().__init__(f"{endpoint}: {message}")
        self.endpoint = endpoint
        self.status_code = status_code


class ExecuteResult(BaseModel):
    """Reply of `/execute` and `/setup/execute` (OSWorld shape). `status` is "success" when the
    command ran (whatever its exit code) and "error" when it could not run or timed out;
    `returncode` is the exit code (124 timeout, 127 not found on our env pod)."""

    status: str | None = None
    output: str | None = None
    error: str | None = None
    returncode: int | None = None


class VerifiedExecuteResult(ExecuteResult):
    """Reply of `/setup/execute_with_verification`: `verification` "passed" or "failed" (None when
    nothing was to verify), `wait_time` in seconds; `status` "verification_failed" on failure."""

    verification: str | None = None
    wait_time: float | None = None


class PythonScriptResult(BaseModel):
    """Reply of `/run_python` (OSWorld shape): `status` "success" / "error", `message` = stdout and
    stderr combined, `return_code` None when the script timed out (`error` "TimeoutExpired")."""

    status: str
    message: str = ""
    output: str | None = None
    error: str = ""
    return_code: int | None = None


class BashScriptResult(BaseModel):
    """Reply of `/run_bash_script` (OSWorld shape): stdout and stderr merged in `output`;
    `returncode` -1 when the script timed out or could not run."""

    status: str
    output: str = ""
    error: str = ""
    returncode: int


class DesktopEnvClient:
    """Client of one env at `base_url` (e.g. `http://127.0.0.1:5000`), OSWorld desktop_env/server protocol.

    `timeout_s` is the default time in seconds a request may take, response read whole (connect: at most
    `connect_timeout_s` of it); endpoints that wait server-side (execute, open_file, reset) or move files get
    their own longer timeouts.
    `http`: the HTTP client to send through; None uses the process's client for env pods
    (`common.httpclient.shared`: kept across clients and rollouts), which `close()` leaves open.
    """

    def __init__(self, base_url: str, timeout_s: float = 30.0, connect_timeout_s: float = 5.0,
                 http: HttpClient | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._http = http if http is not None else shared("env")

    @property
    def host(self) -> str:
        """Host name or IP of the env (from `base_url`): where its other services listen, e.g.
        Chrome DevTools on the chromium port and VLC's HTTP interface, as on OSWorld's VMs."""
        return urlsplit(self.base_url).hostname or "127.0.0.1"

    def _request(self, method: str, endpoint: str, *, ok_statuses: tuple[int, ...] = (),
                 timeout_s: float | None = None, **body: Any) -> HttpResponse:
        """Send a request (`body`: `json=`, or form `data=` and `files=`, see `common.httpclient.send`).
        Returns the response when it is 2xx or in `ok_statuses`.

        Raises: EnvError(endpoint) on transport errors and on any other status.
        """
        try:
            response = send(self._http, method, self.base_url + endpoint, connect_timeout_s=self._connect_timeout_s,
                            read_timeout_s=timeout_s if timeout_s is not None else self.timeout_s, **body)
        except HttpError as exc:
            raise EnvError(endpoint, f"{type(exc).__name__}: {exc} ({self.base_url})") from exc
        if response.is_success or response.status_code in ok_statuses:
            return response
        raise EnvError(endpoint, f"HTTP {response.status_code}: {response.text[:500]}", response.status_code)

    def _json(self, response: HttpResponse, endpoint: str) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise EnvError(endpoint, f"invalid JSON reply: {response.text[:200]!r}") from exc

    # -- observation ------------------------------------------------------------------------
    def screenshot(self) -> bytes:
        """PNG bytes of the screen with the cursor drawn (`GET /screenshot`)."""
        return self._request("GET", "/screenshot").content

    def screen_size(self) -> tuple[int, int]:
        """`(width, height)` of the screen in pixels (`POST /screen_size`)."""
        data = self._json(self._request("POST", "/screen_size"), "/screen_size")
        return int(data["width"]), int(data["height"])

    def cursor_position(self) -> tuple[int, int]:
        """Pointer position `(x, y)` in pixels (`GET /cursor_position`)."""
        x, y = self._json(self._request("GET", "/cursor_position"), "/cursor_position")
        return int(x), int(y)

    def windows(self) -> list[dict[str, Any]] | None:
        """The env's managed top-level windows, oldest first (`GET /windows`, our env's extension of
        OSWorld's protocol: keys of `services.desktop_env.schemas.WindowEntry`, geometry in pixels);
        None when the env has no such endpoint (OSWorld's VM server answers 404)."""
        response = self._request("GET", "/windows", ok_statuses=(404,))
        if response.status_code == 404:
            return None
        data = self._json(response, "/windows")
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise EnvError("/windows", f"expected a list of windows, got {str(data)[:200]!r}")
        return data

    def platform(self) -> str:
        """Operating system name, "Linux" for our envs (`GET /platform`)."""
        return self._request("GET", "/platform").text

    def accessibility(self) -> str:
        """Accessibility tree XML text (`GET /accessibility`, key "AT")."""
        return str(self._json(self._request("GET", "/accessibility"), "/accessibility").get("AT") or "")

    def window_size(self, app_class_name: str) -> dict[str, int] | None:
        """`{"width", "height"}` in pixels of the first window whose WM class is `app_class_name`,
        None when there is none (`POST /window_size`, form field `app_class_name`)."""
        response = self._request("POST", "/window_size", data={"app_class_name": app_class_name},
                                 ok_statuses=(404,))
        if response.status_code == 404:
            return None
        size = self._json(response, "/window_size")
        return {"width": int(size["width"]), "height": int(size["height"])} if isinstance(size, dict) else None

    def wallpaper(self) -> bytes | None:
        """Image bytes of the desktop wallpaper, None when none is set (`POST /wallpaper`)."""
        response = self._request("POST", "/wallpaper", ok_statuses=(404,))
        return None if response.status_code == 404 else response.content

    def terminal(self) -> str:
        """Text of the focused terminal, "" when none is open (`GET /terminal`)."""
        return str(self._json(self._request("GET", "/terminal"), "/terminal").get("output") or "")

    def desktop_path(self) -> str | None:
        """The Desktop folder as OSWorld names it (`/home/user/Desktop`), None when it does not
        exist (`POST /desktop_path`)."""
        response = self._request("POST", "/desktop_path", ok_statuses=(404,))
        if response.status_code == 404:
            return None
        return str(self._json(response, "/desktop_path")["desktop_path"])

    # -- commands -------------------------------------------------------------------------
    def _execute(self, endpoint: str, command: list[str] | str, shell: bool, timeout_s: float | None) -> ExecuteResult:
        body: dict[str, Any] = {"command": command, "shell": shell}
        if timeout_s is not None:
            body["timeout"] = timeout_s
        wait_s = (timeout_s or DEFAULT_EXECUTE_TIMEOUT_S) + _MARGIN_S
        return ExecuteResult.model_validate(self._json(self._request("POST", endpoint, json=body, timeout_s=wait_s),
                                                       endpoint))

    def execute(self, command: list[str] | str, shell: bool = False, timeout_s: float | None = None) -> ExecuteResult:
        """Run `command` in the env and wait for it (`POST /execute`); `timeout_s` server-side
        (default 120 s). A non-zero exit code is a normal result, not an error."""
        return self._execute("/execute", command, shell, timeout_s)

    def setup_execute(self, command: list[str] | str, shell: bool = False,
                      timeout_s: float | None = None) -> ExecuteResult:
        """Same as `execute`, on the setup endpoint (`POST /setup/execute`)."""
        return self._execute("/setup/execute", command, shell, timeout_s)

    def launch(self, command: list[str] | str, shell: bool = False) -> None:
        """Start `command` detached, without waiting (`POST /setup/launch`). Raises: EnvError
        (500) when it cannot start."""
        self._request("POST", "/setup/launch", json={"command": command, "shell": shell})

    def execute_with_verification(self, command: list[str] | str, shell: bool = False, *,
                                  window_exists: str | None = None, command_success: str | None = None,
                                  max_wait_s: float = 10.0, check_interval_s: float = 1.0) -> VerifiedExecuteResult:
        """Run `command`, then wait up to `max_wait_s` seconds (polled every `check_interval_s`) for
        a window whose title contains `window_exists` and/or the shell command `command_success` to
        succeed (`POST /setup/execute_with_verification`). A failed verification is a result with
        `verification` "failed" (the server responds 500 with that body), not an error.

        Raises: EnvError when the command could not run or the request failed otherwise."""
        verification = {k: v for k, v in (("window_exists", window_exists), ("command_success", command_success))
                        if v is not None}
        body = {"command": command, "shell": shell, "verification": verification, "max_wait_time": max_wait_s,
                "check_interval": check_interval_s}
        endpoint = "/setup/execute_with_verification"
        response = self._request("POST", endpoint, json=body, ok_statuses=(500,),
                                 timeout_s=DEFAULT_EXECUTE_TIMEOUT_S + max_wait_s + _MARGIN_S)
        data = self._json(response, endpoint)
        if response.status_code == 500 and data.get("verification") != "failed":
            raise EnvError(endpoint, f"HTTP 500: {response.text[:500]}", 500)
        return VerifiedExecuteResult.model_validate(data)

    def run_python(self, code: str) -> PythonScriptResult:
        """Run a Python script in the env, at most 30 s (`POST /run_python`). A failing or timed-out
        script is a result (`status` "error"), not an exception. Raises: EnvError otherwise."""
        response = self._request("POST", "/run_python", json={"code": code}, ok_statuses=(500,),
                                 timeout_s=30.0 + _MARGIN_S)
        data = self._json(response, "/run_python")
        if response.status_code == 500 and data.get("error") != "TimeoutExpired":
            raise EnvError("/run_python", f"HTTP 500: {response.text[:500]}", 500)
        return PythonScriptResult.model_validate(data)

    def run_bash_script(self, script: str, timeout_s: float = 30.0,
                        working_dir: str | None = None) -> BashScriptResult:
        """Run a bash script in `working_dir` (default the home), at most `timeout_s` seconds
        (`POST /run_bash_script`). A failing or timed-out script is a result, not an exception.
        Raises: EnvError when the request is refused (no script, no such directory) or fails."""
        body = {"script": script, "timeout": timeout_s, "working_dir": working_dir}
        response = self._request("POST", "/run_bash_script", json=body, ok_statuses=(500,),
                                 timeout_s=timeout_s + _MARGIN_S)
        return BashScriptResult.model_validate(self._json(response, "/run_bash_script"))

    # -- files ----------------------------------------------------------------------------
    def upload_file(self, file_path: str, data: bytes) -> None:
        """Write `data` to `file_path` in the env, parents created (`POST /setup/upload`)."""
        self._request("POST", "/setup/upload", data={"file_path": file_path},
                      files={"file_data": ("file", data)}, timeout_s=max(self.timeout_s, 120.0))

    def get_file(self, path: str) -> bytes | None:
        """Bytes of `path` in the env, None when it does not exist or lies outside the env's sandbox
        (`POST /file` 404 or 403; OSWorld's client also returns None for both)."""
        response = self._request("POST", "/file", data={"file_path": path}, ok_statuses=(403, 404),
                                 timeout_s=max(self.timeout_s, 120.0))
        if response.status_code == 403:
            log.warning("env %s refused %r: %s", self.base_url, path, response.text[:300])
        return None if response.status_code in (403, 404) else response.content

    def list_directory(self, path: str) -> dict[str, Any] | None:
        """Tree `{"type": "directory", "name", "children": [...]}` of `path`, None when it is not
        a directory or lies outside the env's sandbox (`POST /list_directory` 400, 403, 404)."""
        response = self._request("POST", "/list_directory", json={"path": path}, ok_statuses=(400, 403, 404))
        if not response.is_success:
            return None
        tree = self._json(response, "/list_directory").get("directory_tree")
        return tree if isinstance(tree, dict) else None

    def download_file(self, url: str, path: str) -> None:
        """Have the env fetch `url` into `path` (`POST /setup/download_file`). Raises: EnvError
        (500 naming the cause) when the download fails."""
        self._request("POST", "/setup/download_file", json={"url": url, "path": path}, timeout_s=330.0)

    def change_wallpaper(self, path: str) -> None:
        """Make the image file `path` in the env the desktop wallpaper (`POST /setup/change_wallpaper`).
        Raises: EnvError (404 when the file does not exist)."""
        self._request("POST", "/setup/change_wallpaper", json={"path": path})

    def open_file(self, path: str, timeout_s: float = 30.0) -> None:
        """Open `path` with its default application and wait up to `timeout_s` seconds for its
        window (`POST /setup/open_file`). Raises: EnvError when the file is missing (404) or no
        window appears (500)."""
        self._request("POST", "/setup/open_file", json={"path": path, "timeout": timeout_s},
                      timeout_s=timeout_s + _MARGIN_S)

    # -- windows --------------------------------------------------------------------------
    def _window(self, endpoint: str, name: str, strict: bool, by_class: bool, timeout_s: float) -> bool:
        body = {"window_name": name, "strict": strict, "by_class": by_class, "timeout": timeout_s}
        response = self._request("POST", endpoint, json=body, ok_statuses=(404,), timeout_s=timeout_s + _MARGIN_S)
        return response.is_success

    def activate_window(self, name: str, strict: bool = False, by_class: bool = False, timeout_s: float = 5.0) -> bool:
        """Raise and focus the window whose title (or `by_class`: WM class) contains `name`
        (`strict`: equals it); waits up to `timeout_s` s for it. False when there is no such
        window (`POST /setup/activate_window`)."""
        return self._window("/setup/activate_window", name, strict, by_class, timeout_s)

    def close_window(self, name: str, strict: bool = False, by_class: bool = False, timeout_s: float = 5.0) -> bool:
        """Close the window matching `name` like `activate_window`; False when there is none
        (`POST /setup/close_window`)."""
        return self._window("/setup/close_window", name, strict, by_class, timeout_s)

    # -- recording ------------------------------------------------------------------------
    def start_recording(self) -> None:
        """Start a screen recording (`POST /start_recording`). Raises: EnvError (400 while one
        runs, 500 when ffmpeg fails, 501 without ffmpeg)."""
        self._request("POST", "/start_recording")

    def end_recording(self) -> bytes:
        """Stop the recording and return the MP4 bytes (`POST /end_recording`)."""
        return self._request("POST", "/end_recording", timeout_s=max(self.timeout_s, 60.0)).content

    # -- lifecycle ------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to a clean desktop: windows, processes and home wiped (`POST /reset`, ours)."""
        self._request("POST", "/reset", timeout_s=max(self.timeout_s, 60.0))

    def healthy(self) -> bool:
        """True when `GET /healthz` responds with 200 within the connect + 5 s timeout."""
        try:
            return self._request("GET", "/healthz", timeout_s=5.0).status_code == 200
        except EnvError:
            return False

    def close(self) -> None:
        """Done with this env. The HTTP client is shared (or the caller's): it stays open, its idle
        connections to this env stay for the next client (libcurl drops one the env closed before reusing it)."""

    def __enter__(self) -> DesktopEnvClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
