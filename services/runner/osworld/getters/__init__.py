"""OSWorld evaluator getters, one module per OSWorld getters module (`desktop_env/evaluators/getters/`).

Each module registers its getters in a module-level `GETTERS` dict (and, optionally, what they need
beyond an env in `NEEDS`); `GETTERS` / `NEEDS` here are their unions.
"""

from __future__ import annotations

from typing import Any

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters import calc, chrome, file, general, gimp, impress, info, misc, vlc, vscode
from services.runner.osworld.getters.base import Getter
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.registry import merge_registries
from services.runner.osworld.requirements import Needs

DOMAIN_MODULES = (calc, chrome, file, general, gimp, impress, info, misc, vlc, vscode)

GETTERS: dict[str, Getter] = merge_registries(DOMAIN_MODULES, "GETTERS")
NEEDS: dict[str, Needs] = merge_registries(DOMAIN_MODULES, "NEEDS")
"""Getter type -> `getter(env, config, ctx)`; getter type -> requirements (e.g. `{"internet"}`)."""


def get_state(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> Any:
    """Run the getter named by `config["type"]`.

    Raises: EvalError naming the type when it is missing or unknown.
    """
    kind = config.get("type")
    getter = GETTERS.get(kind) if isinstance(kind, str) else None
    if getter is None:
        raise EvalError(f"unsupported OSWorld getter type {kind!r}; supported: {', '.join(sorted(GETTERS))}")
    return getter(env, config, ctx)


__all__ = ["DOMAIN_MODULES", "GETTERS", "NEEDS", "Getter", "get_state"]
