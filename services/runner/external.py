"""One episode of an external agent (`services/runner/agent/external.py`): a program run beside the env.

1. The runner opens a gateway session for the rollout (`POST /v1/sessions`, `episode_events: false`: the runner
   publishes the episode's start and end itself) and notes the env's last executed action (`GET /execute_log`).
2. It starts the program (the command line `RUNNER_EXTERNAL_AGENTS` maps the run's `agent_options.command`
   to; its own process group) in its bubblewrap sandbox (`external_sandbox.py`: no view of the runner's
   processes, files or secrets; network only to the env and the session) with only `INHERITED_ENV` of the
   runner's environment (never its secrets) and: `OSWORLD_SERVER_URL` (the env pod's OSWorld HTTP server),
   `OPENAI_BASE_URL` (the session's), `OPENAI_API_KEY` (the session's own token: valid on that URL only,
   never the runner's gateway key), `CUA_MODEL`, `CUA_INSTRUCTION`, `CUA_MAX_STEPS`,
   `CUA_SCREEN_WIDTH` / `CUA_SCREEN_HEIGHT` (pixels), `CUA_SESSION_ID`, and `CUA_RESULT_FILE`: where the
   program may write its verdict, `DONE` or `FAIL` (the task's evaluator reads the last action: an
   infeasible task scores 1 on `FAIL`, as in OSWorld).
3. It waits for the program to exit, at most `agent_options.timeout_s` (then the process group is killed and
   the episode is `truncated`); a non-zero exit, or the verdict `FAIL`, is the agent's failure (`agent_fail`,
   scored; the end of its stderr in the error of a non-zero exit).
4. It closes the session (its records come back) and reads the actions the env executed meanwhile; each
   action joins the last call that started before it (actions before any call join the first), and every call
   is published again as its `cua.step.v1` record with those `actions` and the last one's `execution` (same
   step numbers: the sink rewrites the gateway's records of the calls).

The caller (`rollout.py`) then scores the final state with the task's evaluator.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from common.events import ExecResult, ParsedAction, StepEvent
from common.run import RolloutJob
from common.status import RolloutStatus
from services.runner.external_sandbox import SandboxUnavailable, sandbox
from services.runner.outcome import EpisodeStop, RolloutOutcome, StepTotals
from services.runner.publisher import EventPublisher
from services.runner.settings import RunnerSettings

log = logging.getLogger(__name__)

#: Characters of the program's stderr kept in the error of a failed run (its end).
STDERR_CHARS = 2000


@dataclass
class ExternalEpisode:
    """What an external agent's episode uses: the job, its event ref, the env's URL, the screen (pixels),
    the runner's settings, its publisher and the running totals."""

    job: RolloutJob
    ref: dict[str, Any]
    env_url: str
    screen: tuple[int, int]
    settings: RunnerSettings
    publisher: EventPublisher
    totals: StepTotals


def command_line(job: RolloutJob, settings: RunnerSettings) -> list[str]:
    """The argv of the run's program. Raises: EpisodeStop(setup_error) naming the configured programs when the
    run's `agent_options.command` is not one of them (the run's configuration: not retried)."""
    name = str(job.agent_options.get("command") or "")
    if name not in settings.external_agents:
        known = ", ".join(sorted(settings.external_agents)) or "none"
        raise EpisodeStop(RolloutStatus.SETUP_ERROR, f"agent_options.command {name!r} is not a program of this "
                                                     f"runner (RUNNER_EXTERNAL_AGENTS has: {known})")
    return shlex.split(settings.external_agents[name])


def _action(entry: dict[str, Any]) -> ParsedAction:
    """An executed action as a step's action: `execute`, the code (a `python -c` argv's code, else the command
    line) and the log entry's fields."""
    command = entry["command"]
    if isinstance(command, list):
        code = command[2] if len(command) >= 3 and command[1] == "-c" else shlex.join(command)
    else:
        code = command
    return ParsedAction(action_type="execute", code=code, inputs={k: entry[k] for k in (
        "seq", "started_at", "ended_at", "shell", "status", "returncode")})


def join_steps(records: list[dict[str, Any]], actions: list[dict[str, Any]]) -> list[StepEvent]:
    """The session's records (`cua.step.v1` JSON, step order) with the executed actions (`GET /execute_log`
    entries) joined: each action to the last call started before it (the first call when none did). No call:
    one step with the actions alone."""
    steps = [StepEvent.model_validate(r) for r in records]
    if not steps:
        return []
    joined: list[list[dict[str, Any]]] = [[] for _ in steps]
    for entry in actions:
        index = 0
        for i, step in enumerate(steps):
            if step.timestamp <= entry["started_at"]:
                index = i
        joined[index].append(entry)
    out = []
    for step, entries in zip(steps, joined, strict=True):
        update: dict[str, Any] = {"actions": [_action(e) for e in entries]}
        if entries:
            last = entries[-1]
            update["execution"] = ExecResult(returncode=last["returncode"], output=last["output"], error=last["error"])
            update["timings"] = step.timings.model_copy(update={
                "env_ms": sum((e["ended_at"] - e["started_at"]) * 1000.0 for e in entries)})
        out.append(step.model_copy(update=update))
    return out


#: The runner's environment variables a program inherits; nothing else (the runner's own hold secrets: Redis
#: password, S3 keys).
INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "SSL_CERT_FILE")


def program_env(episode: ExternalEpisode, env_url: str, base_url: str, session: dict[str, Any],
                result_file: Path) -> dict[str, str]:
    """The program's environment: `INHERITED_ENV` from the runner's, and the episode's variables (module
    docstring): `env_url` and `base_url` as the program reaches them (its sandbox's relays), the session's own
    token as its key."""
    inherited = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
    session_id = str(session["session_id"])
    return {**inherited, "OSWORLD_SERVER_URL": env_url, "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": str(session.get("token") or "EMPTY"), "CUA_MODEL": episode.job.model,
            "CUA_INSTRUCTION": episode.job.task.instruction, "CUA_MAX_STEPS": str(episode.job.max_steps),
            "CUA_SCREEN_WIDTH": str(episode.screen[0]), "CUA_SCREEN_HEIGHT": str(episode.screen[1]),
            "CUA_SESSION_ID": session_id, "CUA_RESULT_FILE": str(result_file)}


def _run_program(argv: list[str], env: dict[str, str], timeout_s: float, work: Path) -> tuple[int | None, str]:
    """Run the program to its end or `timeout_s` (then kill its process group); (exit code or None on timeout,
    the end of its stderr). Raises: EpisodeStop(setup_error) when it cannot start."""
    stderr_path = work / "stderr.txt"
    with stderr_path.open("wb") as stderr, (work / "stdout.txt").open("wb") as stdout:
        try:
            process = subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                                       cwd=work, start_new_session=True)
        except OSError as exc:
            raise EpisodeStop(RolloutStatus.SETUP_ERROR, f"the external agent {argv[0]!r} cannot start: {exc}") from exc
        try:
            code: int | None = process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the program's children too
            process.wait()
    return code, stderr_path.read_text(errors="replace")[-STDERR_CHARS:]


@contextlib.contextmanager
def _confined(argv: list[str], work: Path, episode: ExternalEpisode,
              session: dict[str, Any]) -> Iterator[tuple[list[str], str, str]]:
    """(the command line to run, the env's URL and the session's base URL as the program sees them): in its
    sandbox; without one only when `RUNNER_EXTERNAL_UNSANDBOXED` allows it.
    Raises: EpisodeStop(setup_error) naming why the sandbox cannot be built."""
    try:
        with sandbox(argv, work, episode.env_url, episode.settings.gateway_url, session["path"]) as box:
            yield box.argv, box.env_url, box.base_url
            return
    except SandboxUnavailable as exc:
        if not episode.settings.external_unsandboxed:
            raise EpisodeStop(RolloutStatus.SETUP_ERROR, f"the external agent's sandbox cannot be built ({exc}); "
                              f"set RUNNER_EXTERNAL_UNSANDBOXED=1 to run it without one") from exc
        log.warning("external agent runs UNSANDBOXED (RUNNER_EXTERNAL_UNSANDBOXED=1): %s", exc)
    yield argv, episode.env_url, session["base_url"]


def _gateway(settings: RunnerSettings) -> httpx.Client:
    key = settings.gateway_api_key
    timeout = httpx.Timeout(60.0, connect=settings.model_connect_timeout_s)
    return httpx.Client(base_url=settings.gateway_url, timeout=timeout,
                        headers={"Authorization": f"Bearer {key.get_secret_value()}"} if key else {})


def run_external(episode: ExternalEpisode) -> RolloutOutcome:
    """Run the external agent's episode (see the module docstring); the outcome to score.
    Raises: EpisodeStop: setup_error (unknown or unstartable program), model_error (the gateway's session could
    not open or close), env_error (the env's action log could not be read)."""
    job, settings, totals = episode.job, episode.settings, episode.totals
    argv = command_line(job, settings)
    timeout_s = float(job.agent_options.get("timeout_s") or 600)
    with _gateway(settings) as gateway, httpx.Client(base_url=episode.env_url, timeout=30.0) as env:
        try:
            before = int(env.get("/execute_log").raise_for_status().json()["last"])
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            raise EpisodeStop(RolloutStatus.ENV_ERROR, f"the env's action log cannot be read: {exc!r}") from exc
        spec = {key: episode.ref[key] for key in ("run_id", "task_id", "rollout_index", "rollout_id", "attempt")}
        try:
            session = gateway.post("/v1/sessions", json={**spec, "model": job.model, "agent": "external",
                                                         "episode_events": False, "ttl_s": timeout_s + 300})
            session.raise_for_status()
        except httpx.HTTPError as exc:
            raise EpisodeStop(RolloutStatus.MODEL_ERROR, f"the gateway could not open a session: {exc!r}") from exc
        info = session.json()
        with tempfile.TemporaryDirectory(prefix="cua-external-") as tmp:
            work = Path(tmp)
            result_file = work / "result.txt"
            started = time.monotonic()
            totals.timings.first_model_at = started
            with _confined(argv, work, episode, info) as (run_argv, env_url, base_url):
                code, stderr = _run_program(run_argv, program_env(episode, env_url, base_url, info, result_file),
                                            timeout_s, work)
            program_ms = (time.monotonic() - started) * 1000.0
            verdict = result_file.read_text().strip().upper() if result_file.exists() else None
        try:
            closed = gateway.delete(f"/v1/sessions/{info['session_id']}")
            closed.raise_for_status()
            actions = env.get("/execute_log", params={"after": before}).raise_for_status().json()["entries"]
        except httpx.HTTPError as exc:
            raise EpisodeStop(RolloutStatus.MODEL_ERROR, f"the session's records could not be read: {exc!r}") from exc
    steps = join_steps(closed.json()["records"], actions)
    for step in steps:
        started_publish = time.perf_counter()
        episode.publisher.publish(step)
        # The steps' wall time is the program's (added below), not this loop's.
        totals.timings.add_step(step.timings, publish_ms=(time.perf_counter() - started_publish) * 1000.0,
                                loop_ms=0.0)
        totals.steps += 1
        totals.prompt_tokens += step.usage.prompt_tokens
        totals.completion_tokens += step.usage.completion_tokens
        if step.model_version:
            totals.versions.append(step.model_version)
    totals.timings.steps_ms += program_ms
    last_action = verdict if verdict in ("DONE", "FAIL") else None
    if code is None:
        return RolloutOutcome(status=RolloutStatus.TRUNCATED, num_steps=len(steps), last_action=last_action,
                              error=f"the external agent ran past its {timeout_s:g} s and was stopped")
    if code != 0:
        return RolloutOutcome(status=RolloutStatus.AGENT_FAIL, num_steps=len(steps), last_action=last_action,
                              error=f"the external agent exited with code {code}: {stderr}")
    if last_action == "FAIL":  # the agent gave up (OSWorld's FAIL): scored, as the step loop's agents' FAIL is
        return RolloutOutcome(status=RolloutStatus.AGENT_FAIL, num_steps=len(steps), last_action=last_action,
                              error="the external agent answered FAIL")
    return RolloutOutcome(status=RolloutStatus.COMPLETED, num_steps=len(steps), last_action=last_action)
