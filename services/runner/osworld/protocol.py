"""The slice of `common.env_client.DesktopEnvClient` this package uses (structural typing).

Semantics follow the OSWorld VM server protocol (OSWorld `desktop_env/server/main.py`); method
names are those of our `DesktopEnvClient`. Every method may raise `common.env_client.EnvError` on a
transport failure; this package lets it propagate.
"""

from __future__ import annotations

from typing import Any, Protocol


class ExecResultLike(Protocol):
    """Reply of `/execute` and `/setup/execute`: `returncode` is the process exit code; a non-zero
    code is a normal reply, not a transport error."""

    @property
    def status(self) -> str | None: ...

    @property
    def output(self) -> str | None: ...

    @property
    def error(self) -> str | None: ...

    @property
    def returncode(self) -> int | None: ...


class EnvLike(Protocol):
    """A desktop env as used by setup, getters and evaluation (exactly the methods used here)."""

    @property
    def host(self) -> str:
        """Host name or IP where the env's other services listen (Chrome DevTools, VLC HTTP)."""
        ...

    def accessibility(self) -> str:
        """Accessibility tree XML in OSWorld's format (`GET /accessibility`)."""
        ...

    def window_size(self, app_class_name: str) -> dict[str, int] | None:
        """`{"width", "height"}` of the first window of WM class `app_class_name` (`POST /window_size`)."""
        ...

    def wallpaper(self) -> bytes | None:
        """Image bytes of the desktop wallpaper, None when none is set (`POST /wallpaper`)."""
        ...

    def execute(
        self, command: list[str] | str, shell: bool = False, timeout_s: float | None = None
    ) -> ExecResultLike:
        """Run a command in the env (`POST /execute`)."""
        ...

    def setup_execute(
        self, command: list[str] | str, shell: bool = False, timeout_s: float | None = None
    ) -> ExecResultLike:
        """Run a setup command in the env (`POST /setup/execute`)."""
        ...

    def launch(self, command: list[str] | str, shell: bool = False) -> Any:
        """Start a detached process (`POST /setup/launch`)."""
        ...

    def upload_file(self, file_path: str, data: bytes) -> Any:
        """Write `data` to `file_path` in the env (`POST /setup/upload`)."""
        ...

    def get_file(self, path: str) -> bytes | None:
        """Contents of `path` in the env, or None when it does not exist (`POST /file`)."""
        ...

    def terminal(self) -> str:
        """Text of the focused terminal (`GET /terminal`)."""
        ...

    def open_file(self, path: str) -> Any:
        """Open `path` with its default application (`POST /setup/open_file`)."""
        ...

    def activate_window(self, name: str, strict: bool = False, by_class: bool = False) -> Any:
        """Raise and focus a window by title (or WM class) (`POST /setup/activate_window`)."""
        ...

    def close_window(self, name: str, strict: bool = False, by_class: bool = False) -> Any:
        """Close a window by title (or WM class) (`POST /setup/close_window`)."""
        ...

    def list_directory(self, path: str) -> dict[str, Any] | None:
        """Directory tree `{"name", "type", "children": [...]}` (`POST /list_directory`); None if missing."""
        ...

    def screen_size(self) -> tuple[int, int]:
        """Screen size in pixels, `(width, height)` (`POST /screen_size`)."""
        ...
