"""Command routes: `/execute`, `/setup/execute`, `/setup/execute_with_verification`,
`/setup/launch`, `/run_python`, `/run_bash_script` (OSWorld `desktop_env/server/main.py`), and our
`GET /execute_log` (the actions `/execute` ran, `execute_log.py`).

Deliberate difference on `/execute`: a command that cannot start or times out is a 200 reply with
`status: "error"` and return code 127/126/124 (OSWorld: HTTP 500), so the runner can tell an
agent's bad command from a broken env.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import Histogram

from services.desktop_env import operations
from services.desktop_env.commands import RC_NOT_FOUND, RC_TIMEOUT
from services.desktop_env.execute_log import ExecuteLogReply
from services.desktop_env.operations import OperationError
from services.desktop_env.pod import Pod, PodDep
from services.desktop_env.schemas import (
    BashScriptBody,
    BashScriptReply,
    CommandBody,
    ErrorReply,
    ExecuteReply,
    RunPythonBody,
    RunPythonReply,
    VerifiedCommandBody,
    VerifiedExecuteReply,
)

EXECUTE_SECONDS = Histogram("desktop_env_execute_seconds", "Duration of /execute and /setup/execute", ["mode"])
RUN_PYTHON_TIMEOUT_S = 30.0  # OSWorld's /run_python limit

router = APIRouter(tags=["execute"])


async def _execute(pod: Pod, body: CommandBody) -> ExecuteReply:
    command = pod.command(body.command, body.shell)
    started = time.perf_counter()
    outcome, mode = await pod.execute(command, body.shell, body.timeout or pod.settings.execute_timeout_s)
    EXECUTE_SECONDS.labels(mode).observe(time.perf_counter() - started)
    return ExecuteReply.model_validate(outcome.as_json())


@router.post("/execute", response_model=ExecuteReply, responses={400: {"model": ErrorReply}})
async def execute(pod: PodDep, body: CommandBody) -> ExecuteReply:
    """Run a command to its end; `python -c` code runs in a fresh process forked from the env's
    zygote (see `zygote`), anything else as a subprocess. Logged (`execute_log`)."""
    started_at = time.time()
    reply = await _execute(pod, body)
    pod.execute_log.add(started_at, body.command, body.shell, reply.status, reply.returncode, reply.output,
                        reply.error)
    return reply


@router.get("/execute_log", response_model=ExecuteLogReply)
async def execute_log(pod: PodDep, after: int = Query(default=0, ge=0)) -> ExecuteLogReply:
    """The actions `/execute` ran after number `after`, oldest first (our own route, not OSWorld's)."""
    return pod.execute_log.since(after)


@router.post("/setup/execute", response_model=ExecuteReply, responses={400: {"model": ErrorReply}})
async def setup_execute(pod: PodDep, body: CommandBody) -> ExecuteReply:
    """Same as `/execute` (OSWorld's setup steps call this one)."""
    return await _execute(pod, body)


@router.post("/setup/execute_with_verification", response_model=VerifiedExecuteReply,
             response_model_exclude_none=True,
             responses={400: {"model": ErrorReply}, 500: {"model": VerifiedExecuteReply}})
@router.post("/execute_with_verification", response_model=VerifiedExecuteReply, response_model_exclude_none=True,
             include_in_schema=False)
async def execute_with_verification(pod: PodDep, body: VerifiedCommandBody) -> VerifiedExecuteReply | JSONResponse:
    """Run the command, then poll its `verification` every `check_interval` s for up to
    `max_wait_time` s. 200 with `verification: "passed"` (or without the key when nothing was to
    verify); 500 with `status: "verification_failed"` when it never held; 500 when the command
    could not run (as OSWorld)."""
    command = pod.command(body.command, body.shell)
    outcome, _ = await pod.execute(command, body.shell, body.timeout or pod.settings.execute_timeout_s)
    if outcome.status != "success":
        raise OperationError(500, outcome.error.strip() or "the command could not run")
    reply = VerifiedExecuteReply.model_validate(outcome.as_json())
    checks = body.verification
    if checks.window_exists is None and checks.command_success is None:
        return reply
    started = time.monotonic()
    command_success = None if checks.command_success is None else pod.mapper.to_env(checks.command_success)
    passed = await run_in_threadpool(operations.verify, pod.display, pod.desktop.commands, checks.window_exists,
                                     command_success, body.max_wait_time, body.check_interval)
    if passed:
        reply.verification, reply.wait_time = "passed", round(time.monotonic() - started, 3)
        return reply
    reply.status, reply.verification, reply.wait_time = "verification_failed", "failed", body.max_wait_time
    return JSONResponse(reply.model_dump(), status_code=500)


@router.post("/setup/launch", response_class=PlainTextResponse, responses={400: {"model": ErrorReply},
                                                                          500: {"model": ErrorReply}})
def launch(pod: PodDep, body: CommandBody) -> str:
    """Start a command detached, without waiting; 500 when it cannot start (as OSWorld)."""
    command = pod.command(body.command, body.shell)
    try:
        pod.desktop.commands.launch(command, body.shell)
    except OSError as exc:
        raise OperationError(500, f"cannot launch {command!r}: {exc}") from exc
    shown = command if isinstance(command, str) else " ".join(command)
    return f"{shown} launched successfully"


def _script_path(pod: Pod, name: str) -> Path:
    """A fresh file name for a script in the env's runtime directory (visible to its processes)."""
    directory = pod.desktop.runtime_dir / "scripts"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / name


@router.post("/run_python", response_model=RunPythonReply, responses={400: {"model": ErrorReply},
                                                                       500: {"model": RunPythonReply}})
def run_python(pod: PodDep, body: RunPythonBody) -> RunPythonReply | JSONResponse:
    """Run a Python script (as `python <file>`, forked from the zygote) for at most 30 s; OSWorld's
    reply shape: `status` "error" on a non-zero exit; 500 with `error: "TimeoutExpired"` on timeout."""
    if not body.code:
        raise OperationError(400, "Code not supplied!")
    code = pod.mapper.to_env(body.code)
    path = _script_path(pod, f"python_exec_{uuid.uuid4().hex}.py")
    path.write_text(code)
    try:
        reply = pod.zygote.run(code, [str(path)], pod.desktop.env, pod.desktop.home, RUN_PYTHON_TIMEOUT_S,
                               filename=str(path))
    finally:
        path.unlink(missing_ok=True)
    if reply.timed_out:
        timeout = RunPythonReply(status="error", message="Execution timeout: Code took too long to execute",
                                 output=None, error="TimeoutExpired")
        return JSONResponse(timeout.model_dump(exclude={"return_code"}), status_code=500)
    output, error = pod.mapper.to_osworld(reply.output), pod.mapper.to_osworld(reply.error)
    if reply.returncode != 0 and not error:
        error = f"Process exited with code {reply.returncode}"
    message = output + (("\n" + error if output else error) if error else "")
    return RunPythonReply(status="success" if reply.returncode == 0 else "error", message=message, output=output,
                          error=error, return_code=reply.returncode)


@router.post("/run_bash_script", response_model=BashScriptReply, responses={400: {"model": BashScriptReply},
                                                                             500: {"model": BashScriptReply}})
def run_bash_script(pod: PodDep, body: BashScriptBody) -> BashScriptReply | JSONResponse:
    """Run a bash script (`#!/bin/bash` prepended when missing) in `working_dir`, stdout and
    stderr merged into `output`, at most `timeout` s. OSWorld's reply shapes: 400 without a
    script or with a missing directory, 500 on timeout (`returncode` -1)."""
    def failed(status_code: int, output: str) -> JSONResponse:
        reply = BashScriptReply(status="error", output=output, returncode=-1)
        return JSONResponse(reply.model_dump(), status_code=status_code)

    if not body.script:
        return failed(400, "Script not supplied!")
    cwd = pod.resolve(body.working_dir) if body.working_dir else pod.desktop.home
    if not cwd.is_dir():
        return failed(400, f"Working directory does not exist: {body.working_dir}")
    script = body.script if "#!/bin/bash" in body.script else "#!/bin/bash\n\n" + body.script
    path = _script_path(pod, f"bash_exec_{uuid.uuid4().hex}.sh")
    path.write_text(pod.mapper.to_env(script))
    path.chmod(0o755)
    try:
        outcome = pod.desktop.commands.run(["bash", str(path)], False, body.timeout, merge_stderr=True, cwd=cwd)
        if outcome.status == "error" and outcome.returncode == RC_NOT_FOUND:  # no bash: sh, as OSWorld
            outcome = pod.desktop.commands.run(["sh", str(path)], False, body.timeout, merge_stderr=True, cwd=cwd)
    finally:
        path.unlink(missing_ok=True)
    if outcome.status == "error" and outcome.returncode == RC_TIMEOUT:
        return failed(500, f"Script execution timed out after {body.timeout:g} seconds")
    if outcome.status == "error":
        return failed(500, f"Failed to execute script: {outcome.error.strip()}")
    return BashScriptReply(status="success" if outcome.returncode == 0 else "error",
                           output=pod.mapper.to_osworld(outcome.output), returncode=outcome.returncode)
