"""The setup step handler signature shared by the setup modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.runner.osworld.context import SetupContext
from services.runner.osworld.protocol import EnvLike

StepHandler = Callable[[dict[str, Any], EnvLike, SetupContext], None]
"""`handler(parameters, env, ctx)`: runs one step. Raises: SetupError for bad parameters."""
