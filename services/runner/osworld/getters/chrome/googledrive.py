"""OSWorld `get_googledrive_file` (getters/chrome.py): downloads a file from the task account's
Google Drive with pydrive. Needs Google account credentials and the internet, never available to an
offline rollout: the getter fails with an EvalError saying so, and declares `GOOGLE_DRIVE`."""

from __future__ import annotations

from typing import Any

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import EXPLANATIONS, GOOGLE_DRIVE


def get_googledrive_file(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> None:
    """`googledrive_file` (`settings_file`, `path` / `query`, `dest`). Raises: EvalError, always."""
    raise EvalError(f"googledrive_file: {EXPLANATIONS[GOOGLE_DRIVE]} (settings file {config.get('settings_file')!r})")
