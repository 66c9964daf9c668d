"""OSWorld `desktop_env/evaluators/getters/general.py`: command output and terminal text.

`command` reaches the env as written (OSWorld's getters substitute no placeholders). `shell` is read
as a flag: OSWorld forwards the JSON value and its server uses it as truthy, so the string "false"
would mean a shell there; no task writes that (tasks write true, false or "true").
"""

from __future__ import annotations

from typing import Any

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter
from services.runner.osworld.params import as_bool, require_command
from services.runner.osworld.protocol import EnvLike, ExecResultLike
from services.runner.osworld.requirements import Needs


def _run(env: EnvLike, config: dict[str, Any], ctx: EvalContext, where: str) -> ExecResultLike | None:
    """`command` run via `/execute`; None when the server reports an error status (OSWorld's getters
    return None on a non-200 reply, which its server sends when the command cannot run)."""
    command = require_command(config, "command", where, EvalError)
    shell = as_bool(config.get("shell", False), "shell", where, EvalError)
    result = env.execute(command, shell=shell)
    if result.status not in (None, "success"):
        return None
    return result


def get_vm_command_line(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None:
    """`vm_command_line`: stdout text of `command` (`shell` optional); None on a server error."""
    result = _run(env, config, ctx, "vm_command_line")
    return None if result is None else result.output


def get_vm_command_error(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None:
    """`vm_command_error`: stderr text of `command`; None on a server error."""
    result = _run(env, config, ctx, "vm_command_error")
    return None if result is None else result.error


def get_vm_terminal_output(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None:
    """`vm_terminal_output`: text of the focused terminal ("" when none is focused; OSWorld's
    controller gives None there, which every metric of the benchmark scores like "")."""
    return env.terminal()


GETTERS: dict[str, Getter] = {
    "vm_command_line": get_vm_command_line,
    "vm_command_error": get_vm_command_error,
    "vm_terminal_output": get_vm_terminal_output,
}
NEEDS: dict[str, Needs] = {}
