"""OSWorld `desktop_env/evaluators/getters/gimp.py`: GIMP's config files."""

from __future__ import annotations

from typing import Any

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter
from services.runner.osworld.getters.env_paths import expand_user, save_copy
from services.runner.osworld.params import require_str
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import Needs

GIMP_CONFIG_DIR = "~/.config/GIMP/2.10/"
"""GIMP 2.10's per-user config directory (OSWorld's VM runs GIMP 2.10)."""


def get_gimp_config_file(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None:
    """`gimp_config_file`: copy `~/.config/GIMP/2.10/<file_name>` (e.g. `gimprc`, `sessionrc`) from
    the env to `work_dir/<dest>`; returns the local path, or None when the file is missing or empty
    (GIMP writes them when it quits).

    Raises: EvalError for a missing `file_name` / `dest` or when the env cannot expand `~`.
    """
    file_name = require_str(config, "file_name", "gimp_config_file", EvalError)
    dest = require_str(config, "dest", "gimp_config_file", EvalError)
    path = expand_user(env, GIMP_CONFIG_DIR + file_name, "gimp_config_file")
    data = env.get_file(path)
    if not data:
        return None
    return save_copy(ctx, dest, data, "gimp_config_file")


GETTERS: dict[str, Getter] = {
    "gimp_config_file": get_gimp_config_file,
}
NEEDS: dict[str, Needs] = {}
