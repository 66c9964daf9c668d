"""The state every route of the env pod shares: its desktop session and zygote (`Pod`), given to
routes with FastAPI's `Depends(get_pod)`; and the helpers several routes use."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from services.desktop_env import confine
from services.desktop_env.commands import ExecOutcome, normalize, python_c
from services.desktop_env.execute_log import ExecuteLog
from services.desktop_env.homemap import HomeMapper
from services.desktop_env.operations import OperationError
from services.desktop_env.session import DesktopSession
from services.desktop_env.settings import DesktopEnvSettings
from services.desktop_env.zygote import Zygote


@dataclass
class Pod:
    """One env: `settings`, its started `desktop` session, the `zygote` of its actions and the log of the
    actions executed (`execute_log`)."""

    settings: DesktopEnvSettings
    desktop: DesktopSession
    zygote: Zygote
    execute_log: ExecuteLog = field(default_factory=ExecuteLog)

    @property
    def display(self) -> str:
        """X display of the env, e.g. `:99`."""
        return self.desktop.display

    @property
    def mapper(self) -> HomeMapper:
        """`/home/user` <-> the env's home."""
        return self.desktop.mapper

    def resolve(self, path: str) -> Path:
        """`path` of a request in the env's file system (`~`, `$HOME`, `/home/user`, relative to
        the home)."""
        return self.mapper.resolve(path, self.desktop.env)

    def resolve_confined(self, path: str) -> Path:
        """`resolve(path)`, then `..` and symlinks resolved and checked to stay inside the env's
        allowed roots (`DESKTOP_FILE_ROOTS`, see `confine`).

        Raises: OperationError(400) for an invalid name, OperationError(403) for a path outside."""
        confine.check_name(path)
        return confine.confine(self.resolve(path), path, self.settings.allowed_roots)

    def command(self, command: list[str] | str, shell: bool) -> list[str] | str:
        """A request's command rewritten for this env (home mapping, OSWorld's argv rules).

        Raises: OperationError(400) when it is empty."""
        prepared = normalize(self.mapper.command_to_env(command), shell)
        if isinstance(prepared, list):
            prepared = self.mapper.expand_tilde(prepared)
        if not prepared:
            raise OperationError(400, "Empty command.")
        return prepared

    async def execute(self, command: list[str] | str, shell: bool, timeout_s: float) -> tuple[ExecOutcome, str]:
        """Run a prepared command to its end: `python -c` forked from the zygote (awaited on the
        event loop), anything else as a subprocess (in a worker thread). Returns the outcome (paths
        shown as OSWorld's) and the mode ("zygote" or "subprocess").

        An action that arrives while `/reset` runs waits for it: it must act on the clean desktop,
        not on one being torn down (and the reset must not kill it half-way).

        Raises: ZygoteError when the env's zygote is broken."""
        if self.desktop.resetting:  # checked first: actions are the hot path, resets are rare
            await run_in_threadpool(self.desktop.wait_for_reset)
        invocation = python_c(command)
        if invocation is not None:
            reply = await self.zygote.arun(invocation.code, invocation.argv, self.desktop.env, self.desktop.home,
                                           timeout_s)
            outcome, mode = reply.outcome(timeout_s), "zygote"
        else:
            outcome = await run_in_threadpool(self.desktop.commands.run, command, shell, timeout_s)
            mode = "subprocess"
        outcome.output, outcome.error = self.mapper.to_osworld(outcome.output), self.mapper.to_osworld(outcome.error)
        return outcome, mode


def get_pod(request: Request) -> Pod:
    """FastAPI dependency: the app's `Pod` (set by `server.create_app`)."""
    pod: Pod = request.app.state.pod
    return pod


PodDep = Annotated[Pod, Depends(get_pod)]
