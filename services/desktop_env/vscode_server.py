"""One code-server per env and its Chromium app window, driven by the env's `code` command
(`vscode_cli`).

Everything lives under the env's home, so `/reset` (which rebuilds the home) starts VS Code afresh:
- `~/.config/Code`: code-server's `--user-data-dir`, laid out as desktop VS Code's: `User/settings.json`
  and `User/keybindings.json` (OSWorld's getters read them), `Machine/settings.json` (this env's
  defaults, `MACHINE_SETTINGS`: kept out of the user's settings, which tasks compare whole), and the
  session socket `code-server-ipc.sock` through which open windows take further files;
- `~/.vscode/extensions`: the extensions, as desktop VS Code's;
- `~/.config/code-server/config.yaml`: code-server's options (`CONFIG`);
- `~/.local/share/code-server/cua/`: the running server (`server.json`: pid, port), the window's
  browser (`browser.json`), their logs, the browser profile `browser/`, and the lock that serialises
  concurrent `code` calls.

code-server listens on a free port of 127.0.0.1 (`--bind-addr 127.0.0.1:0`, the port read from its
log), so envs sharing a network namespace never collide. Its processes inherit the env's marker
variable; Chromium overwrites its environment block, so `/reset` finds the window's browser by its
profile directory in the env's home (`session.DesktopSession._stop_env_processes`).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from common.polling import DeadlineExceeded, GiveUp, wait_until
from services.desktop_env import x11
from services.desktop_env.vscode_cli import CodeRequest

APP_NAME = "Visual Studio Code"  # code-server's `--app-name`: the window title ends with it, as VS Code's
SERVER_START_TIMEOUT_S = 60.0
SESSION_TIMEOUT_S = 60.0
"""Seconds a `code` call waits for a starting window to take files through the session socket."""

#: code-server's options (config.yaml; JSON strings are YAML strings): no login, no telemetry, no
#: update check, no workspace-trust prompt, no Coder advert on the welcome page, VS Code's name.
CONFIG = {
    "bind-addr": "127.0.0.1:0",
    "auth": "none",
    "cert": False,
    "disable-telemetry": True,
    "disable-update-check": True,
    "disable-workspace-trust": True,
    "disable-getting-started-override": True,
    "app-name": APP_NAME,
}
#: Defaults of this env's VS Code, as Machine settings (the Settings editor's "Remote" tab), so the
#: user's settings.json holds only what the user (or a task) writes. chat.disableAIFeatures: else a
#: Copilot agent host starts, tries the network and outlives the server; no extension update checks
#: (the marketplace is unreachable offline); no experiments fetched.
MACHINE_SETTINGS = {
    "chat.disableAIFeatures": True,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": "off",  # the value VS Code migrates `false` to (it rewrites the file otherwise)
    "workbench.enableExperiments": False,
}
#: Chromium flags of the window: an app window (no tabs or address bar), maximized, offline-friendly
#: (no sync, component updates or background requests), the renderer's accessibility tree on (as the
#: env's Chrome), no keyring prompt, no warning bar for --no-sandbox (--test-type).
BROWSER_FLAGS = ("--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--password-store=basic",
                 "--force-renderer-accessibility", "--disable-features=Translate,MediaRouter", "--test-type",
                 "--start-maximized", "--disable-session-crashed-bubble", "--noerrdialogs")
_LISTENING = re.compile(rb"HTTP server listening on http://127\.0\.0\.1:(\d+)/")
#: Variables not passed to code-server: $PORT and CODE_SERVER_HOST override its bind address; VSCODE_*
#: and CODE_SERVER_* of a calling VS Code terminal belong to that window.
_CLEARED_PREFIXES = ("VSCODE_", "CODE_SERVER_")
_CLEARED_VARS = ("PORT",)


class ServerError(RuntimeError):
    """code-server did not start, or no window took the request in time; the message says which."""


def _pid_runs(pid: int, mark: str) -> bool:
    """True when process `pid` lives and its command line contains `mark` (not a reused pid)."""
    try:
        return mark.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class VSCodeServer:
    """The env's code-server and window for the home `home` (see module doc); `code_server` is the
    installed launcher, `browser` Debian's chromium launcher (absolute paths)."""

    def __init__(self, home: Path, code_server: Path, browser: str) -> None:
        self.home, self.code_server, self.browser = home, code_server, browser
        self.user_data_dir = home / ".config" / "Code"
        self.extensions_dir = home / ".vscode" / "extensions"
        self.config_file = home / ".config" / "code-server" / "config.yaml"
        self.state_dir = home / ".local" / "share" / "code-server" / "cua"
        self.profile = self.state_dir / "browser"
        self.session_socket = self.user_data_dir / "code-server-ipc.sock"

    # -- files and the extension CLI ----------------------------------------------------------
    def _prepare(self) -> None:
        """Create the directories (code-server cannot make its session socket in a missing one), the
        config (always ours) and the Machine settings (kept when present: the user may edit them)."""
        for directory in (self.user_data_dir / "User", self.user_data_dir / "Machine", self.extensions_dir,
                          self.config_file.parent, self.state_dir):
            directory.mkdir(parents=True, exist_ok=True)
        config = {**CONFIG, "user-data-dir": str(self.user_data_dir), "extensions-dir": str(self.extensions_dir)}
        lines = [f"{key}: {json.dumps(value)}" for key, value in config.items()]
        self.config_file.write_text("# code-server's options for this env's VS Code (the env's `code` command)\n"
                                    + "\n".join(lines) + "\n")
        machine = self.user_data_dir / "Machine" / "settings.json"
        if not machine.exists():
            machine.write_text(json.dumps(MACHINE_SETTINGS, indent=4) + "\n")

    def _server_env(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items()
                if not k.startswith(_CLEARED_PREFIXES) and k not in _CLEARED_VARS}

    def cli(self, args: list[str], capture: bool = False) -> subprocess.CompletedProcess[str]:
        """Run code-server's own command line with this env's config and directories (extension
        commands, `--version`); its output goes to ours unless `capture`."""
        self._prepare()
        return subprocess.run([str(self.code_server), "--config", str(self.config_file), *args],
                              env=self._server_env(), capture_output=capture, text=True, check=False)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self.state_dir / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _read_state(self, name: str) -> dict[str, Any]:
        try:
            state = json.loads((self.state_dir / name).read_text())
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    # -- the server ---------------------------------------------------------------------------
    def running_port(self) -> int | None:
        """The port of this env's running, healthy code-server, or None."""
        state = self._read_state("server.json")
        pid, port = state.get("pid"), state.get("port")
        if not isinstance(pid, int) or not isinstance(port, int) or not _pid_runs(pid, str(self.config_file)):
            return None
        return port if self._healthy(port) else None

    @staticmethod
    def _healthy(port: int) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5.0, trust_env=False).status_code == 200
        except httpx.HTTPError:
            return False

    def _start_server(self) -> int:
        self._prepare()
        log_path = self.state_dir / "server.log"
        offset = log_path.stat().st_size if log_path.exists() else 0
        argv = [str(self.code_server), "--config", str(self.config_file)]
        with open(log_path, "ab") as log:
            process = subprocess.Popen(argv, env=self._server_env(), cwd=self.home, stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

        def listening() -> int | None:
            with open(log_path, "rb") as log:
                log.seek(offset)
                match = _LISTENING.search(log.read())
            if process.poll() is not None:
                raise GiveUp(f"code-server exited with code {process.returncode}")
            return int(match.group(1)) if match and self._healthy(int(match.group(1))) else None

        try:
            port = wait_until(listening, SERVER_START_TIMEOUT_S, "code-server to listen", interval_s=0.1)
        except (GiveUp, DeadlineExceeded) as exc:
            if process.poll() is None:
                process.kill()
            tail = log_path.read_bytes()[offset:][-1500:].decode(errors="replace").strip()
            raise ServerError(f"{exc}; its log ({log_path}): {tail}") from exc
        (self.state_dir / "server.json").write_text(json.dumps({"pid": process.pid, "port": port}))
        return port

    # -- the window ---------------------------------------------------------------------------
    def browser_pid(self) -> int | None:
        """PID of the running browser that shows this env's VS Code windows, or None."""
        pid = self._read_state("browser.json").get("pid")
        return pid if isinstance(pid, int) and _pid_runs(pid, f"--user-data-dir={self.profile}") else None

    def _needs_no_sandbox(self) -> bool:
        # Chromium's sandbox needs user namespaces: none as root, or where a container forbids them
        if os.geteuid() == 0:
            return True
        return subprocess.run(["unshare", "--user", "true"], capture_output=True, check=False).returncode != 0

    def _launch_window(self, url: str) -> None:
        """A new app window on `url`: the first starts the browser, later ones are handed to it."""
        running = self.browser_pid() is not None
        argv = [self.browser, *(["--no-sandbox"] if self._needs_no_sandbox() else []), *BROWSER_FLAGS,
                f"--user-data-dir={self.profile}", f"--app={url}"]
        with open(self.state_dir / "browser.log", "ab") as log:
            process = subprocess.Popen(argv, cwd=self.home, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        if not running:  # Debian's /usr/bin/chromium execs the browser: this pid is the browser's
            (self.state_dir / "browser.json").write_text(json.dumps({"pid": process.pid}))

    @staticmethod
    def window_url(port: int, target: str | None, goto: bool) -> str:
        """The workbench URL of a new window showing `target`: a folder (`?folder=`), a
        `.code-workspace` file (`?workspace=`), a file in an empty window (code-server's `payload`
        `openFile`, with `gotoLineMode` for `FILE:LINE[:COLUMN]`), or the last folder (None)."""
        base = f"http://127.0.0.1:{port}/"
        if target is None:
            return base
        plain = _strip_position(target) if goto else target
        if os.path.isdir(plain):
            return f"{base}?folder={quote(plain)}"
        if plain.endswith(".code-workspace") and os.path.isfile(plain):
            return f"{base}?workspace={quote(plain)}"
        payload: list[list[str]] = [["openFile", f"vscode-remote://127.0.0.1:{port}{quote(target, safe='/:')}"]]
        if goto:
            payload.append(["gotoLineMode", "true"])
        return f"{base}?ew=true&payload={quote(json.dumps(payload, separators=(',', ':')))}"

    def _window_socket(self, path: str) -> str:
        """The IPC socket of an open window's extension host for `path` (a window whose folder holds
        it first, else the newest): a calling VS Code terminal's own, else asked of code-server's
        session socket, polled while a window starts. Raises: ServerError after SESSION_TIMEOUT_S."""
        hook = os.environ.get("VSCODE_IPC_HOOK_CLI")
        if hook and Path(hook).exists():
            return hook
        transport = httpx.HTTPTransport(uds=str(self.session_socket))
        with httpx.Client(transport=transport, base_url="http://code-server", timeout=5.0) as client:
            def socket_path() -> str | None:
                found = client.get("/session", params={"filePath": path}).json().get("socketPath")
                return found if isinstance(found, str) and found else None

            try:
                return wait_until(socket_path, SESSION_TIMEOUT_S, "a VS Code window to connect", interval_s=0.2)
            except DeadlineExceeded as exc:
                raise ServerError(f"no VS Code window took the request: {exc}") from exc

    def _send_open(self, paths: list[str], request: CodeRequest, new_window: bool) -> None:
        """Hand `paths` to an open window (the message code-server's own CLI sends, plus VS Code's
        add and diff modes), then raise that window."""
        folders = [p for p in paths if os.path.isdir(_strip_position(p) if request.goto else p)]
        message = {"type": "open", "folderURIs": [Path(p).as_uri() for p in folders],
                   "fileURIs": [Path(p).as_uri() for p in paths if p not in folders],
                   "forceReuseWindow": request.reuse_window, "forceNewWindow": new_window,
                   "gotoLineMode": request.goto, "addMode": request.add, "diffMode": request.diff}
        socket = self._window_socket(paths[0] if paths else str(self.home))
        try:
            with httpx.Client(transport=httpx.HTTPTransport(uds=socket), timeout=30.0) as client:
                client.post("http://vscode/", content=json.dumps(message)).raise_for_status()
        except httpx.HTTPError as exc:
            raise ServerError(f"the VS Code window did not take the request ({socket}): {exc}") from exc
        self.focus()

    def focus(self) -> None:
        """Raise the newest VS Code window of this env's browser (as `code` does on the desktop)."""
        pid, display = self.browser_pid(), os.environ.get("DISPLAY")
        if pid is None or not display:
            return
        windows = [w for w in x11.list_windows(display) if w.pid == pid and APP_NAME in w.title]
        if windows:
            x11.activate(display, windows[-1].wid)

    def open(self, request: CodeRequest) -> None:
        """Open `request`'s paths as desktop VS Code does (see `vscode_cli`), starting code-server
        and its window first when they do not run. Raises: ServerError."""
        with self._locked():
            port = self.running_port()
            # a window left from a server that died (the agent may kill it) cannot take files
            needs_window = port is None or self.browser_pid() is None
            if port is None:
                port = self._start_server()
            if request.add or request.diff or request.reuse_window:
                if needs_window:
                    self._launch_window(self.window_url(port, None, False))
                if request.paths:
                    self._send_open(request.paths, request, request.new_window)
                else:
                    self.focus()
                return
            first = request.paths[0] if request.paths else None
            plain = _strip_position(first) if first and request.goto else first
            if needs_window or request.new_window or (plain is not None and os.path.isdir(plain)) or (
                    plain is not None and plain.endswith(".code-workspace")):
                self._launch_window(self.window_url(port, first, request.goto))
                rest = request.paths[1:]
            else:
                rest = request.paths
                if not rest:
                    self.focus()
            if rest:  # into the window just opened, or the last one
                self._send_open(rest, request, new_window=False)


def _strip_position(path: str) -> str:
    """`FILE:LINE[:COLUMN]` without its position (`--goto` syntax); other paths unchanged."""
    parts = path.rsplit(":", 2)
    while len(parts) > 1 and parts[-1].isdigit():
        parts.pop()
    return ":".join(parts)
