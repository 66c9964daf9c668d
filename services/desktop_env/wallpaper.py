"""The desktop wallpaper setting of one env, where OSWorld keeps it: GNOME's
`org.gnome.desktop.background picture-uri`, read and written with `gsettings` inside the env (its
D-Bus session and dconf database live in the env's home, so `/reset` clears the setting).
Source: OSWorld `desktop_env/server/main.py` (`/wallpaper`, `/setup/change_wallpaper`), whose
Linux branch runs the same two gsettings commands. A task that sets the wallpaper with gsettings
itself is seen by `/wallpaper` the same way.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from services.desktop_env.commands import RC_NOT_FOUND, CommandRunner

_SCHEMA, _KEY = "org.gnome.desktop.background", "picture-uri"
_TIMEOUT_S = 10.0


class WallpaperError(RuntimeError):
    """gsettings is missing or failed (the message says which and why)."""


def _gsettings(runner: CommandRunner, *args: str) -> str:
    outcome = runner.run(["gsettings", *args], shell=False, timeout_s=_TIMEOUT_S)
    if outcome.returncode == RC_NOT_FOUND and outcome.status == "error":
        raise WallpaperError("gsettings is not installed in this env (Debian package libglib2.0-bin)")
    if outcome.status != "success" or outcome.returncode != 0:
        raise WallpaperError(f"gsettings {' '.join(args)} failed ({outcome.returncode}): {outcome.error.strip()}")
    return outcome.output


def path_from_uri(value: str) -> Path | None:
    """The file of a `picture-uri` value as gsettings prints it (`'file:///a/b.png'`), None when
    it names no local file. Percent-escapes are decoded (OSWorld strips only `file://`)."""
    uri = value.strip().strip("'\"")
    if not uri:
        return None
    if uri.startswith("file://"):
        return Path(unquote(urlsplit(uri).path))
    return Path(uri) if uri.startswith("/") else None


def current(runner: CommandRunner) -> Path | None:
    """The wallpaper file the env's settings name (it may not exist). Raises: WallpaperError."""
    return path_from_uri(_gsettings(runner, "get", _SCHEMA, _KEY))


def change(runner: CommandRunner, image: Path) -> None:
    """Make `image` the env's wallpaper (`picture-uri`). Raises: WallpaperError."""
    _gsettings(runner, "set", _SCHEMA, _KEY, image.absolute().as_uri())
