"""Run OSWorld commands as subprocesses of the env (`/execute`, `/setup/execute`, `/setup/launch`).

Differences from OSWorld's server, on purpose:
- stdout/stderr go to temporary files, not pipes, and only the command itself is waited for: a
  command that leaves a background app running (`mousepad f &`) returns at once instead of
  hanging until the timeout on a pipe the app keeps open;
- a command that cannot start or times out is a normal reply with `status: "error"` and
  `returncode` 127/126/124 (shell conventions) instead of an HTTP 500, so the runner can tell an
  agent's bad command from a broken env;
- on timeout the command's whole process group is killed.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from services.desktop_env.processes import ChildRegistry

PYTHON_NAMES = frozenset({"python", "python3", f"python{sys.version_info.major}.{sys.version_info.minor}"})

RC_TIMEOUT = 124
RC_NOT_EXECUTABLE = 126
RC_NOT_FOUND = 127


@dataclass
class ExecOutcome:
    """Reply of `/execute` (OSWorld shape): `status` is "success" when the command ran to its end
    (whatever its exit code) and "error" when it could not run or timed out."""

    status: str
    output: str
    error: str
    returncode: int

    def as_json(self) -> dict[str, object]:
        """The JSON body OSWorld clients read."""
        return {"status": self.status, "output": self.output, "error": self.error, "returncode": self.returncode}


def normalize(command: list[str] | str, shell: bool) -> list[str] | str:
    """OSWorld's argument rules: a string without `shell` is split like a shell would; a list with
    `shell` is joined. `python`/`python3` as the program resolve to this server's interpreter."""
    if shell:
        return command if isinstance(command, str) else shlex.join(command)
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if argv and argv[0] in PYTHON_NAMES:
        argv[0] = sys.executable
    return argv


@dataclass(frozen=True)
class PythonC:
    """A `python -c <code> [args...]` invocation: `argv` is what `sys.argv` is for it (`-c`, args)."""

    code: str
    argv: list[str]


def python_c(argv: list[str] | str) -> PythonC | None:
    """The code and `sys.argv` of `argv` when it is `python -c <code> [args...]` run by a Python
    named like ours (these run forked from the env's zygote, see `zygote`); None otherwise."""
    if isinstance(argv, str) or len(argv) < 3 or argv[1] != "-c":
        return None
    if argv[0] != sys.executable and Path(argv[0]).name not in PYTHON_NAMES:
        return None
    return PythonC(argv[2], ["-c", *argv[3:]])


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode("utf-8", "replace")


class CommandRunner:
    """Starts commands with the env's environment and cwd (its home), tracking every child."""

    def __init__(self, env: Mapping[str, str], cwd: Path, registry: ChildRegistry) -> None:
        self.env = dict(env)
        self.cwd = cwd
        self.registry = registry

    def _spawn(self, command: list[str] | str, shell: bool, **kwargs: object) -> subprocess.Popen[bytes]:
        kwargs.setdefault("cwd", self.cwd)
        with self.registry.spawning():
            process = subprocess.Popen(command, shell=shell, env=self.env,  # type: ignore[call-overload]
                                       start_new_session=True, **kwargs)
            self.registry.add(process)
        return process

    def start_helper(self, argv: list[str], pass_fds: tuple[int, ...], log_path: Path) -> subprocess.Popen[bytes]:
        """Start a long-lived helper process of the env (the zygote) with the env's environment and
        cwd, the descriptors `pass_fds` inherited, output appended to `log_path`. The caller
        stops it (it also dies with the env's processes on reset).

        Raises: OSError when it cannot start."""
        with log_path.open("ab") as log_file:
            return self._spawn(argv, False, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                               pass_fds=pass_fds)

    def run(self, command: list[str] | str, shell: bool, timeout_s: float, *, merge_stderr: bool = False,
            cwd: Path | None = None) -> ExecOutcome:
        """Run `command` (already normalized) to completion, at most `timeout_s` seconds, in `cwd`
        (default the env's home). `merge_stderr`: stderr goes into `output` too (`error` is "")."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                process = self._spawn(command, shell, stdin=subprocess.DEVNULL, stdout=out,
                                      stderr=subprocess.STDOUT if merge_stderr else err, cwd=cwd or self.cwd)
            except FileNotFoundError as exc:
                return ExecOutcome("error", "", f"command not found: {exc.filename}", RC_NOT_FOUND)
            except PermissionError as exc:
                return ExecOutcome("error", "", f"permission denied: {exc.filename}", RC_NOT_EXECUTABLE)
            try:
                returncode = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self._kill_group(process)
                return ExecOutcome("error", _read(out), f"Command timed out after {timeout_s:g} seconds.\n"
                                   + _read(err), RC_TIMEOUT)
            finally:
                self.registry.discard(process)
            return ExecOutcome("success", _read(out), _read(err), returncode)

    def launch(self, command: list[str] | str, shell: bool) -> int:
        """Start `command` detached (OSWorld `/setup/launch`); returns its pid.

        Raises: FileNotFoundError / PermissionError when the program cannot start.
        """
        process = self._spawn(command, shell, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        return process.pid

    def _kill_group(self, process: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        process.wait()
