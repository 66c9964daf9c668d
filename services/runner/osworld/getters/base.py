"""What the getter modules share: the getter signature and the per-rollout work directory.

Semantics of OSWorld `desktop_env/evaluators/getters/` (`get_<type>(env, config)`): a getter config
is `{"type": <name>, ...}`. Every getter module pairs with the OSWorld getters module of the same
name and registers its getters in a module-level `GETTERS` dict that `getters/__init__.py` merges.
A getter whose value depends on something this machine may lack (the live web, Google Drive) lists
it in the module's `NEEDS` dict (getter type -> requirement names, see `support.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.protocol import EnvLike

Getter = Callable[[EnvLike, dict[str, Any], EvalContext], Any]


def work_dir(ctx: EvalContext, where: str) -> Path:
    if ctx.work_dir is None:
        raise EvalError(f"{where}: needs a work dir (EvalContext.work_dir)")
    ctx.work_dir.mkdir(parents=True, exist_ok=True)
    return ctx.work_dir
