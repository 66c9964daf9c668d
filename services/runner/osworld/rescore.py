"""Score a stored trajectory again from what its evaluation read, without re-running the episode
(`cua-rollout rescore`): after a metric fix, the current metric code runs on the recorded getter
states (`evidence.py`); the env is never touched.

A new score is written beside the old one as `score_v<N>.json` (N = 2, 3, ...; version 1 is the
reward the runner recorded in `reward.txt`, which stays as it was):
`{"schema": "cua.score.v1", "version", "reward", "previous_reward", "error", "scored_at"}`.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from common.objectstore import ObjectStore
from common.task import OSWorldTask
from services.runner.osworld.context import EvalContext, SetupContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.evaluate import evaluate
from services.runner.osworld.evidence import EvidenceError, load_replay

SCORE_SCHEMA = "cua.score.v1"
_SCORE_FILE = re.compile(r"/score_v(\d+)\.json$")


class RescoreResult(BaseModel):
    """One trajectory rescored: its previous and new reward (None when the metric failed: `error`)."""

    trajectory: str
    version: int
    previous_reward: float | None
    reward: float | None
    error: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the new score differs from the previous one."""
        return self.reward != self.previous_reward or self.error is not None


class _NoEnv:
    """Stands in for the env during a replay: any use of it is a bug in the replay."""

    def __getattr__(self, name: str) -> Any:
        raise EvalError(f"rescoring must not use the env (tried {name!r})")


def rescore_states(task_config: dict[str, Any], evaluation: dict[str, Any], files_dir: Path) -> float:
    """The reward of `task_config`'s evaluator on the recorded states of an `evaluation.json`
    document whose files are in `files_dir`.

    Raises: EvalError when a metric fails or the evidence does not match the evaluator."""
    task = OSWorldTask.model_validate(task_config)
    try:
        replay, last_action = load_replay(evaluation, files_dir)
    except EvidenceError as exc:
        raise EvalError(str(exc)) from exc
    setup = SetupContext(client_password="", screen=(0, 0), cache_dir=files_dir)
    ctx = EvalContext(setup=setup, cache_dir=files_dir, work_dir=files_dir, replay=replay)
    no_env: Any = _NoEnv()  # Any: it answers every attribute (by raising), so it passes for an EnvLike
    return evaluate(task.evaluator, no_env, ctx, last_action)


def _previous(store: ObjectStore, trajectory: str) -> tuple[int, float | None]:
    versions = [int(m.group(1)) for key in store.list(f"{trajectory}/score_v") if (m := _SCORE_FILE.search(key))]
    if versions:
        latest = json.loads(store.get(f"{trajectory}/score_v{max(versions)}.json"))
        return max(versions), latest.get("reward")
    try:
        return 1, float(store.get(f"{trajectory}/reward.txt"))
    except KeyError:
        return 1, None


def rescore_trajectory(store: ObjectStore, trajectory: str) -> RescoreResult:
    """Rescore one stored trajectory (`<run>/<task>_<index>`) and write its next `score_v<N>.json`.

    Raises: KeyError when it has no `evaluation.json` or `task_config.json` (never scored)."""
    evaluation = json.loads(store.get(f"{trajectory}/evaluation.json"))
    task_config = json.loads(store.get(f"{trajectory}/task_config.json"))
    version, previous = _previous(store, trajectory)
    with tempfile.TemporaryDirectory(prefix="rescore-") as tmp:
        files_dir = Path(tmp)
        for key in store.list(f"{trajectory}/evidence/"):
            (files_dir / key.rsplit("/", 1)[1]).write_bytes(store.get(key))
        try:
            reward: float | None = rescore_states(task_config, evaluation, files_dir)
            error = None
        except EvalError as exc:
            reward, error = None, str(exc)
    result = RescoreResult(trajectory=trajectory, version=version + 1, previous_reward=previous, reward=reward,
                           error=error)
    document = {"schema": SCORE_SCHEMA, "version": result.version, "reward": reward, "previous_reward": previous,
                "error": error, "scored_at": time.time()}
    store.put(f"{trajectory}/score_v{result.version}.json", json.dumps(document, indent=2).encode(), "application/json")
    return result


def rescore_run(store: ObjectStore, run_id: str) -> list[RescoreResult]:
    """Rescore every trajectory of a run that kept its evaluation's inputs (unscored ones, e.g.
    infrastructure failures, have none and are left alone)."""
    trajectories = sorted({key.rsplit("/", 1)[0] for key in store.list(f"{run_id}/")
                           if key.endswith("/evaluation.json")})
    return [rescore_trajectory(store, trajectory) for trajectory in trajectories]
