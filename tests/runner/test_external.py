"""The external agent's pieces that need no stack: which program a run names, and how the session's calls and
the env's executed actions join into steps (the whole path: tests/e2e/test_external_agent_e2e.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from common.events import StepEvent
from common.run import RolloutJob
from common.status import RolloutStatus
from common.task import OSWorldTask
from services.runner.external import ExternalEpisode, command_line, join_steps, program_env
from services.runner.outcome import EpisodeStop, StepTotals
from services.runner.settings import RunnerSettings
from services.runner.timings import AttemptTimings

REF = {"run_id": "r", "task_id": "t", "rollout_index": 0, "rollout_id": "r:t:0"}


def call(step: int, at: float) -> dict[str, Any]:
    return StepEvent(**REF, step=step, timestamp=at, session_id="s-1", response=f"call {step}",
                     token_ids=[step]).model_dump(by_alias=True)


def action(seq: int, at: float, command: Any, returncode: int = 0) -> dict[str, Any]:
    return {"seq": seq, "started_at": at, "ended_at": at + 0.25, "command": command, "shell": False,
            "status": "success", "returncode": returncode, "output": f"out {seq}", "error": ""}


def test_each_action_joins_the_last_call_started_before_it() -> None:
    steps = join_steps([call(0, 10.0), call(1, 20.0), call(2, 30.0)], [
        action(1, 5.0, "early"), action(2, 12.0, ["python", "-c", "import pyautogui; pyautogui.press('a')"]),
        action(3, 13.0, ["xdotool", "key", "a b"], returncode=1), action(4, 35.0, "late")])
    assert [[a.code for a in s.actions] for s in steps] == [
        ["early", "import pyautogui; pyautogui.press('a')", "xdotool key 'a b'"], [], ["late"]]
    first = steps[0]
    assert first.execution.returncode == 1 and first.execution.output == "out 3"  # the last action's
    assert first.timings.env_ms == pytest.approx(750.0) and first.response == "call 0" and first.token_ids == [0]
    assert [a.inputs["seq"] for a in first.actions] == [1, 2, 3] and steps[1].execution.output == ""
    assert join_steps([], [action(1, 1.0, "x")]) == []


def job(options: dict[str, Any]) -> RolloutJob:
    task = OSWorldTask.model_validate({"id": "t", "instruction": "do it", "config": [], "evaluator": {
        "func": "infeasible"}})
    return RolloutJob(run_id="r", task=task, rollout_index=0, max_steps=3, agent="external", agent_options=options,
                      model="m", sampling={})


def test_a_run_names_only_a_program_of_the_runner() -> None:
    settings = RunnerSettings(external_agents={"agent_s": "python -m agent --flag 'a b'"})
    assert command_line(job({"command": "agent_s"}), settings) == ["python", "-m", "agent", "--flag", "a b"]
    with pytest.raises(EpisodeStop, match="'rm -rf /' is not a program of this runner .RUNNER_EXTERNAL_AGENTS has: "
                                          "agent_s") as stopped:
        command_line(job({"command": "rm -rf /"}), settings)
    assert stopped.value.status is RolloutStatus.SETUP_ERROR


def test_the_program_gets_the_episodes_variables_and_none_of_the_runners_secrets(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CUA_LOCAL_MODE", "1")  # a non-loopback REDIS_URL with short test secrets: not refused here
    monkeypatch.setenv("REDIS_URL", "redis://:secret@redis:6379/0")
    monkeypatch.setenv("S3_SECRET_KEY", "secret")
    monkeypatch.setenv("PATH", "/usr/bin")
    settings = RunnerSettings(gateway_api_key="gw-key")  # type: ignore[arg-type]
    episode = ExternalEpisode(job({"command": "x"}), REF, "http://env:5000", (1920, 1080), settings,
                              None, StepTotals(AttemptTimings(picked_at=0.0)))  # type: ignore[arg-type]
    env = program_env(episode, "http://127.0.0.1:5000", "http://127.0.0.1:8000/sessions/s-1/v1",
                      {"session_id": "s-1", "token": "cua-session-tok"}, tmp_path / "result.txt")
    assert "secret" not in repr(env) and "gw-key" not in repr(env) and env["PATH"] == "/usr/bin"
    assert {k: env[k] for k in ("OSWORLD_SERVER_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "CUA_MODEL",
                                "CUA_INSTRUCTION", "CUA_MAX_STEPS", "CUA_SCREEN_WIDTH", "CUA_SESSION_ID")} == {
        "OSWORLD_SERVER_URL": "http://127.0.0.1:5000", "OPENAI_BASE_URL": "http://127.0.0.1:8000/sessions/s-1/v1",
        "OPENAI_API_KEY": "cua-session-tok", "CUA_MODEL": "m", "CUA_INSTRUCTION": "do it", "CUA_MAX_STEPS": "3",
        "CUA_SCREEN_WIDTH": "1920", "CUA_SESSION_ID": "s-1"}
