"""What one rollout attempt produced, and the exception that ends an episode early with a status."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.events import EpisodeEvent
from common.status import RolloutStatus
from services.runner.timings import AttemptTimings


@dataclass
class RolloutOutcome:
    """Result of one attempt: terminal status, reward (None unless rewarded), steps, error text, the
    env it ran on, its timings in ms (`services.runner.timings.TIMING_KEYS`) and the model tokens the episode used."""

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
    """What an episode's steps add up to: how many steps were published, the model tokens they used, the
    model versions that answered, and the attempt's timings (`timings`, which the steps add to)."""

    timings: AttemptTimings
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    versions: list[str] = field(default_factory=list)


@dataclass
class EpisodeEnd:
    """What an episode's end event holds besides its outcome: the event ref, env, agent and sampling
    fields, the policy versions that answered, the agent's final messages, the setup log (`fields`:
    `EpisodeEvent` keyword arguments). The event is built once (`event`), when the attempt's outcome and
    timings are final."""

    fields: dict[str, Any]

    def event(self, outcome: RolloutOutcome) -> EpisodeEvent:
        """The end event of `outcome` (its reward only when its status carries one)."""
        return EpisodeEvent(phase="end", status=outcome.status,
                            reward=outcome.reward if outcome.status.has_reward else None,
                            num_steps=outcome.num_steps, error=outcome.error, timings=outcome.timings,
                            evaluation=outcome.evaluation, **self.fields)


class EpisodeStop(Exception):
    """Ends an episode early with a terminal status and an error text."""

    def __init__(self, status: RolloutStatus, error: str | None = None) -> None:
        super().__init__(error or status.value)
        self.status = status
        self.error = error
