"""Client of the oracle process (`tests/oracle/runner.py` in `.venv-oracle`): calls OSWorld's own
evaluator functions so the differential tests can compare them with ours on the same inputs."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ORACLE_PYTHON = ROOT / ".venv-oracle" / "bin" / "python"
RUNNER = Path(__file__).with_name("runner.py")


class OracleUnavailable(RuntimeError):
    """The oracle environment is missing or its process died (run `bash scripts/setup.sh --oracle`)."""


@dataclass(frozen=True)
class OracleReply:
    """What OSWorld's function did: returned `value`, or raised (`error` is its repr, `type` its class)."""

    ok: bool
    value: Any = None
    error: str | None = None
    type: str | None = None


class Oracle:
    """One long-lived oracle process. `call("metrics.table", "compare_table", a, b, rules=[...])`."""

    def __init__(self, runner: Path = RUNNER) -> None:
        """Start `runner` (default: the evaluator oracle) under `.venv-oracle`'s Python."""
        if not ORACLE_PYTHON.exists():
            raise OracleUnavailable(f"{ORACLE_PYTHON} is missing: run `bash scripts/setup.sh --oracle`")
        # OSWorld's metrics write scratch files (e.g. `temp.pdf`) to the working directory
        self._cwd = tempfile.mkdtemp(prefix="oracle-cwd-")
        self._process = subprocess.Popen(
            [str(ORACLE_PYTHON), str(runner)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            cwd=self._cwd,
        )

    def call(self, module: str, func: str, *args: Any, stubs: tuple[str, ...] = (),
             env: dict[str, Any] | None = None, with_env: bool = False, now: str | None = None,
             **kwargs: Any) -> OracleReply:
        """Run `desktop_env.evaluators.<module>.<func>(*args, **kwargs)` in the oracle process.

        `with_env` (or a given `env`) passes a stand-in env object with `env`'s attributes first
        (key `controller`: a stand-in `env.controller`, see `runner.py`); `now` (ISO 8601 with an
        offset) freezes the module's `datetime.now()` for the call.
        Raises: OracleUnavailable when the process is gone, or the module cannot be imported.
        """
        return self.submit(module, func, *args, stubs=stubs, env=env, with_env=with_env, now=now, **kwargs)()

    def submit(self, module: str, func: str, *args: Any, stubs: tuple[str, ...] = (),
               env: dict[str, Any] | None = None, with_env: bool = False, now: str | None = None,
               **kwargs: Any) -> Callable[[], OracleReply]:
        """Send the request of `call` now and return a function that waits for its reply, so the
        caller can compute its own value meanwhile (one request in flight at a time)."""
        request: dict[str, Any] = {"module": module, "func": func, "args": list(args), "kwargs": kwargs,
                                   "stubs": list(stubs)}
        if with_env or env is not None:
            request["env"] = env or {}
        if now is not None:
            request["now"] = now
        return self.send_raw(request, f"{module}.{func}")

    def send_raw(self, request: dict[str, Any], label: str) -> Callable[[], OracleReply]:
        """Send one request of the runner's protocol as is; returns the function that waits for its reply
        (`label` names it in errors)."""
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise OracleUnavailable(f"oracle process died: {exc}") from exc
        return lambda: self._reply(label)

    def _reply(self, label: str) -> OracleReply:
        assert self._process.stdout is not None
        try:
            line = self._process.stdout.readline()
        except OSError as exc:
            raise OracleUnavailable(f"oracle process died: {exc}") from exc
        if not line:
            raise OracleUnavailable(f"oracle process exited with {self._process.poll()}")
        reply = json.loads(line)
        if reply.get("setup_error"):
            raise OracleUnavailable(f"oracle could not run {label}: {reply['error']}\n{reply['traceback']}")
        return OracleReply(ok=reply["ok"], value=reply.get("value"), error=reply.get("error"), type=reply.get("type"))

    def close(self) -> None:
        """Stop the oracle process."""
        if self._process.stdin:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        shutil.rmtree(self._cwd, ignore_errors=True)


def same_value(ours: Any, theirs: Any, tol: float = 1e-9) -> bool:
    """Whether our value equals OSWorld's (numbers within `tol`, bools as numbers, NaN as "nan")."""
    if isinstance(ours, float) and math.isnan(ours):
        return theirs == "nan"
    if isinstance(ours, bool | int | float) and isinstance(theirs, bool | int | float):
        return abs(float(ours) - float(theirs)) <= tol
    if isinstance(ours, list | tuple) and isinstance(theirs, list | tuple):
        return len(ours) == len(theirs) and all(same_value(a, b, tol) for a, b in zip(ours, theirs, strict=True))
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return ours.keys() == theirs.keys() and all(same_value(ours[k], theirs[k], tol) for k in ours)
    return bool(ours == theirs)
