"""Env pod settings (environment variables `DESKTOP_*`, see docs/settings.md)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from common.settings import comma_list, unprefixed
from services.desktop_env.shell import ShellName, default_shell

OSWORLD_HOME = "/home/user"  # the home directory every OSWorld task assumes
POD_IP_HOST = "pod-ip"


def pod_ip() -> str:
    """The pod's own IP address: `POD_IP` (set from the downward API `status.podIP`), else the
    address the host name resolves to (a pod's /etc/hosts maps it to the pod IP).

    Raises: ValueError when neither gives an address."""
    address = os.environ.get("POD_IP", "").strip()
    if address:
        return address
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError as exc:
        raise ValueError(f"DESKTOP_HOST=pod-ip: POD_IP is not set and the host name does not resolve ({exc})") \
            from exc


class DesktopEnvSettings(BaseSettings):
    """One desktop env: an X display plus the OSWorld VM server protocol on `host:port`.

    - `DESKTOP_HOST` / `DESKTOP_PORT`: where the HTTP server listens (OSWorld VMs use port 5000).
      `pod-ip` means the pod's own address: `POD_IP` (Kubernetes downward API, `status.podIP`) or
      else what the host name resolves to; the server then does not listen on every interface.
    - `DESKTOP_FILE_ROOTS`: comma-separated directories `/file`, `/setup/upload`,
      `/setup/download_file` and `/list_directory` may reach (after resolving `..` and symlinks);
      default the env's home. The sandbox sets `/` (its whole root is private).
    - `DESKTOP_DISPLAY`: X display, e.g. `:99`.
    - `DESKTOP_WIDTH` / `DESKTOP_HEIGHT`: screen size in pixels (Xvfb screen 0, 24-bit).
    - `DESKTOP_HOME`: the env's home directory (HOME of every child; wiped on start and by `/reset`,
      so never point it at a real user's home). When it is not `/home/user`, `/home/user` in
      commands and paths is rewritten to it.
    - `DESKTOP_START_XVFB`: true: start Xvfb (and openbox) ourselves; false: use the existing
      display (openbox is still started when no window manager runs there).
    - `DESKTOP_CLIENT_PASSWORD`: the password `sudo -S` expects (OSWorld's `CLIENT_PASSWORD`); only
      the fallback `sudo` shim checks it, a real sudo uses the system's own configuration.
    - `DESKTOP_ENV_ID`: name of this env in logs and process markers (default `host:port`, with the
      machine's hostname when listening on all interfaces).
    - `DESKTOP_RUNTIME_DIR`: private scratch directory (terminal logs, shims, D-Bus socket); default
      a fresh temporary directory, removed on shutdown.
    - `DESKTOP_XDG_RUNTIME_DIR`: the desktop's `XDG_RUNTIME_DIR` (its D-Bus session socket is `bus`
      there); default `<runtime dir>/xdg`. The sandbox sets `/run/user/1000`, as on OSWorld's VMs.
    - `DESKTOP_WIPE_TMP`: true: `/reset` also empties `/tmp` (only for a private /tmp: the sandbox
      sets it); default false.
    - `DESKTOP_SHELL`: `gnome` (GNOME Shell with Ubuntu's dock, as on OSWorld's VM) or `openbox` (a bare
      window manager); default `gnome` when GNOME Shell and the dock extension are installed
      (`shell.default_shell`). Ignored with `DESKTOP_START_XVFB=false` on a display with a window manager.
    - `DESKTOP_EXECUTE_TIMEOUT_S`: default `/execute` timeout in seconds (OSWorld: 120).
    - `LOG_LEVEL` (unprefixed).
    """

    model_config = SettingsConfigDict(env_prefix="DESKTOP_", extra="ignore", populate_by_name=True)

    host: str = "127.0.0.1"
    port: int = 5000
    display: str = ":99"
    width: int = 1920
    height: int = 1080
    home: Path = Path(OSWORLD_HOME)
    start_xvfb: bool = True
    client_password: str = "password"
    env_id: str = ""
    runtime_dir: Path | None = None
    xdg_runtime_dir: Path | None = None
    wipe_tmp: bool = False
    execute_timeout_s: float = 120.0
    shell: ShellName = Field(default_factory=default_shell)
    file_roots: str = ""
    log_level: str = unprefixed("LOG_LEVEL", "INFO")

    @model_validator(mode="after")
    def _derive(self) -> DesktopEnvSettings:
        if not self.display.startswith(":") or not self.display[1:].split(".")[0].isdigit():
            raise ValueError(f"DESKTOP_DISPLAY must look like ':99', got {self.display!r}")
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"screen size must be positive, got {self.width}x{self.height}")
        if self.host == POD_IP_HOST:
            self.host = pod_ip()
        if not self.env_id:
            host = socket.gethostname() if self.host in ("0.0.0.0", "::", "") else self.host
            self.env_id = f"{host}:{self.port}"
        self.home = self.home.expanduser().absolute()
        return self

    @property
    def allowed_roots(self) -> list[Path]:
        """`DESKTOP_FILE_ROOTS` as absolute, symlink-resolved paths (default: the env's home)."""
        roots = comma_list(self.file_roots) or [str(self.home)]
        return [Path(root).expanduser().resolve() for root in roots]

    @property
    def display_number(self) -> int:
        """The display number, e.g. 99 for `:99`."""
        return int(self.display[1:].split(".")[0])
