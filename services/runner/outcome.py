"""What one rollout attempt produced, and the exception that ends an episode early with a status."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.status import RolloutStatus


@dataclass
class RolloutOutcome:
    """Result of one attempt: terminal status, reward (None unless rewarded), steps, error text, the
    env it ran on, its timings in ms (keys in `TIMING_KEYS`) and the model tokens the episode used."""

    status: RolloutStatus
    reward: float | None = None
    num_steps: int = 0
    error: str | None = None
    last_action: str | None = None
    env_id: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: What the evaluation read (`EpisodeEvent.evaluation`), set when the episode was scored.
    evaluation: dict[str, Any] | None = None


#: The per-attempt timings (ms) a runner records (`RolloutOutcome.timings`, the end event's and the
#: rollout record's `timings`). Episode: `total_ms` (start event -> evaluation done), `setup_ms` (reset
#: on lease and the task's `config`), `eval_ms`; sums over the steps: `model_ms`, `env_ms` (=
#: `action_ms` + `screenshot_ms`), `settle_ms`, `steps_ms` (wall time of the step loop's iterations,
#: publishing included), `publish_ms`. Around the episode: `lease_wait_ms`, `reset_ms` (the reset on
#: lease, inside `setup_ms`), `release_ms` (giving the env back, its reset included when the provider
#: resets there), `held_ms` (lease acquired -> lease freed), `job_start_ms` (job picked by the worker ->
#: the attempt starts in the work-horse: fork, RQ bookkeeping, settings), `startup_ms` (job picked ->
#: first model request; absent when no model request was sent), `teardown_ms` (last step or evaluation
#: done -> lease freed).
TIMING_KEYS = ("total_ms", "setup_ms", "eval_ms", "model_ms", "env_ms", "action_ms", "screenshot_ms", "settle_ms",
               "steps_ms", "publish_ms", "lease_wait_ms", "reset_ms", "release_ms", "held_ms", "job_start_ms",
               "startup_ms", "teardown_ms")


@dataclass
class StepTotals:
    """Sums over an episode's steps (ms, tokens), how many steps were published, the model versions that
    answered, when (`time.monotonic()` s) the first model request was sent, and the time (ms) of
    preparing the env before the steps (`reset_ms`: the reset on lease, when one was needed)."""

    steps: int = 0
    model_ms: float = 0.0
    env_ms: float = 0.0
    action_ms: float = 0.0
    screenshot_ms: float = 0.0
    settle_ms: float = 0.0
    steps_ms: float = 0.0
    publish_ms: float = 0.0
    reset_ms: float = 0.0
    first_model_at: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    versions: list[str] = field(default_factory=list)


class EpisodeStop(Exception):
    """Ends an episode early with a terminal status and an error text."""

    def __init__(self, status: RolloutStatus, error: str | None = None) -> None:
        super().__init__(error or status.value)
        self.status = status
        self.error = error
