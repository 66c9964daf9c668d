"""OSWorld `SetupController` Google Drive steps (`googledrive`: clean or fill a Drive folder with
pydrive; `login`: sign Chrome into drive.google.com). Both need Google account credentials
(OSWorld's `settings/googledrive/settings.yml`, `settings/google/settings.json`) and the internet,
which an offline rollout never has: each step fails with a SetupError that says so, and declares
`GOOGLE_DRIVE` so coverage and the producer mark such tasks before anything runs.
"""

from __future__ import annotations

from typing import Any

from services.runner.osworld.context import SetupContext
from services.runner.osworld.errors import SetupError
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import EXPLANATIONS, GOOGLE_DRIVE, INTERNET, Needs
from services.runner.osworld.setup.base import StepHandler


def _googledrive(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`googledrive` (`settings_file`, `operation`, `args`). Raises: SetupError, always (see module doc)."""
    raise SetupError(f"googledrive: {EXPLANATIONS[GOOGLE_DRIVE]} (settings file {params.get('settings_file')!r})")


def _login(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`login` (`settings_file`, `platform`; OSWorld implements only `googledrive`).

    Raises: SetupError, always: Google needs credentials; another platform is unknown to OSWorld too.
    """
    platform = params.get("platform")
    if platform != "googledrive":
        raise SetupError(f"login: platform {platform!r} is not implemented (OSWorld knows only 'googledrive')")
    raise SetupError(f"login: {EXPLANATIONS[GOOGLE_DRIVE]} (settings file {params.get('settings_file')!r})")


SETUP_HANDLERS: dict[str, StepHandler] = {"googledrive": _googledrive, "login": _login}
NEEDS: dict[str, Needs] = {
    "googledrive": frozenset({GOOGLE_DRIVE, INTERNET}),
    "login": frozenset({GOOGLE_DRIVE, INTERNET}),
}
