"""What one rollout attempt produced, and the exception that ends an episode early with a status."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.status import RolloutStatus


@dataclass
class RolloutOutcome:
    """Result of one attempt: terminal status, reward (None unless rewarded), steps, error text, the
    env it ran on, and timings in ms (`total_ms`, `setup_ms`, `eval_ms`, `model_ms`, `env_ms`,
    `settle_ms`), and the model tokens the episode used."""

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


@dataclass
class StepTotals:
    """Sums over an episode's steps (ms, tokens), how many steps were published, and the model versions that
    answered."""

    steps: int = 0
    model_ms: float = 0.0
    env_ms: float = 0.0
    settle_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    versions: list[str] = field(default_factory=list)


class EpisodeStop(Exception):
    """Ends an episode early with a terminal status and an error text."""

    def __init__(self, status: RolloutStatus, error: str | None = None) -> None:
        super().__init__(error or status.value)
        self.status = status
        self.error = error
