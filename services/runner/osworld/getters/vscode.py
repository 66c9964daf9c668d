"""OSWorld `desktop_env/evaluators/getters/vscode.py`: a file VS Code writes when one of its
commands runs."""

from __future__ import annotations

from typing import Any

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter
from services.runner.osworld.getters.file import get_vm_file
from services.runner.osworld.params import require_str
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import Needs

COMMAND_SETTLE_S = 1.0
"""Seconds to let VS Code run the command before the file is read (OSWorld: 1 s)."""


def _keystrokes(command: str) -> list[str]:
    """pyautogui calls that open VS Code's command palette, type `command` and run it (Linux keys)."""
    return ["pyautogui.hotkey('ctrl', 'shift', 'p')", f"pyautogui.typewrite({command!r})", "pyautogui.press('enter')"]


def get_vscode_config(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None | list[str | None]:
    """`vscode_config`: run VS Code command `vscode_extension_command` through its command palette
    (ctrl+shift+p, type it, enter; each keystroke a `python -c` pyautogui call in the env, as
    OSWorld's replay does), wait `COMMAND_SETTLE_S`, then fetch `path` like `vm_file` (None when the
    command wrote nothing). OSWorld's tasks use OSWorld's own VS Code extension command
    `OpenProject`, which writes the open folder's name to `~/OpenProject.txt`.

    Differences from OSWorld: the typed text is quoted with `repr` (OSWorld pastes it between single
    quotes); a failing keystroke is ignored as OSWorld ignores it.
    Raises: EvalError for a missing `vscode_extension_command`, `path` or `dest`.
    """
    command = require_str(config, "vscode_extension_command", "vscode_config", EvalError)
    path = require_str(config, "path", "vscode_config", EvalError)
    dest = require_str(config, "dest", "vscode_config", EvalError)
    for call in _keystrokes(command):
        env.execute(["python", "-c", f"import pyautogui; pyautogui.FAILSAFE = False; {call}"])
    ctx.setup.sleep(COMMAND_SETTLE_S)
    return get_vm_file(env, {"path": path, "dest": dest}, ctx)


GETTERS: dict[str, Getter] = {
    "vscode_config": get_vscode_config,
}
NEEDS: dict[str, Needs] = {}
