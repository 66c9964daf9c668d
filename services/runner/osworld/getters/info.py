"""OSWorld `desktop_env/evaluators/getters/info.py`: screen, window, wallpaper and directory info."""

from __future__ import annotations

from typing import Any

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter, work_dir
from services.runner.osworld.hostpaths import local_name
from services.runner.osworld.params import require_str
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import Needs


def get_list_directory(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> dict[str, Any] | None:
    """`list_directory`: tree of `path`, `{"name", "type", "children": [...]}`."""
    return env.list_directory(require_str(config, "path", "list_directory", EvalError))


def get_vm_screen_size(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> dict[str, int]:
    """`vm_screen_size`: `{"width": px, "height": px}` (OSWorld's shape)."""
    width, height = env.screen_size()
    return {"width": width, "height": height}


def get_vm_window_size(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> dict[str, int] | None:
    """`vm_window_size`: `{"width": px, "height": px}` of the first window of WM class
    `app_class_name`, None when there is none."""
    return env.window_size(require_str(config, "app_class_name", "vm_window_size", EvalError))


def get_vm_wallpaper(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str:
    """`vm_wallpaper`: the desktop wallpaper image written to `work_dir/<dest>`; its host path.
    With no wallpaper the file is empty (as OSWorld, so an image metric reads an empty file)."""
    dest = require_str(config, "dest", "vm_wallpaper", EvalError)
    local = work_dir(ctx, "vm_wallpaper") / local_name(dest, "vm_wallpaper", EvalError)
    local.write_bytes(env.wallpaper() or b"")
    return str(local)


GETTERS: dict[str, Getter] = {
    "vm_window_size": get_vm_window_size,
    "vm_wallpaper": get_vm_wallpaper,
    "list_directory": get_list_directory,
    "vm_screen_size": get_vm_screen_size,
}
NEEDS: dict[str, Needs] = {}
