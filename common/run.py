"""Run request: a batch of tasks x `rollouts_per_task` rollouts (SPEC section 3)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from common.agents import check_agent, check_agent_name
from common.ids import RUN_ID_MAX, RUN_ID_PATTERN, check_run_id, check_task_id
from common.task import OSWorldTask
from common.versions import min_version_for

#: Import paths of what the producer enqueues and the runner defines (RQ imports them by name in the
#: worker): the job function and the failure callback set on every rollout job. The producer never imports
#: the runner; tests/runner/test_rq_callbacks.py checks both paths resolve.
ROLLOUT_JOB_FUNC = "services.runner.job.run_rollout"
ON_FAILURE_CALLBACK = "services.runner.rq_callbacks.on_job_failure"


class Priority(StrEnum):
    """RQ queue a run's rollouts go to."""

    HIGH = "high"
    DEFAULT = "default"
    LOW = "low"


class SamplingParams(BaseModel):
    """OpenAI-style sampling parameters forwarded to the model gateway."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(default=512, ge=1, le=32768)
    logprobs: bool = True


class AdaptiveRollouts(BaseModel):
    """Dynamic rollout number (DART, "Efficient Multi-turn RL for GUI Agents via Decoupled Training
    and Adaptive Data Curation", 2025): each task starts with `min_rollouts`; once all of its
    rollouts have ended, more are added `batch` at a time while its results are mixed (some success,
    some failure), up to `max_rollouts`; a task whose rewarded rollouts all succeed or all fail
    stops. `curriculum` names a hook registered with
    `services.task_producer.adaptive.register_curriculum` that decides instead."""

    model_config = ConfigDict(extra="forbid")

    min_rollouts: int = Field(default=2, ge=1, le=1024)
    max_rollouts: int = Field(default=8, ge=1, le=1024)
    batch: int = Field(default=2, ge=1, le=1024)
    curriculum: str | None = Field(default=None, min_length=1, max_length=100)

    @model_validator(mode="after")
    def _bounds(self) -> AdaptiveRollouts:
        if self.min_rollouts > self.max_rollouts:
            raise ValueError(f"min_rollouts ({self.min_rollouts}) must not exceed max_rollouts ({self.max_rollouts})")
        return self


class RunRequest(BaseModel):
    """`POST /v1/runs` body. Every field is validated; a rejected run enqueues nothing."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[OSWorldTask] = Field(min_length=1, max_length=10000)
    rollouts_per_task: int = Field(default=1, ge=1, le=1024)
    max_steps: int = Field(default=15, ge=1, le=500)
    priority: Priority = Priority.DEFAULT
    agent: str = Field(default="ui_tars_1_5", min_length=1, max_length=100,
                       description="The agent (`cua-rollout agents`, `common/agent_catalogue.json`).")
    agent_options: dict[str, Any] = Field(
        default_factory=dict,
        description="The agent's options (e.g. osworld_prompt's `action_space`, `observation_type`); checked "
                    "against the catalogue, completed with the defaults.")
    model: str = Field(default="ui-tars-1.5-7b", min_length=1)
    sampling: SamplingParams = Field(default_factory=SamplingParams)
    policy_version: str | None = None
    max_staleness: int | None = Field(
        default=None, ge=0,
        description="Accept replicas up to this many versions behind `policy_version` (sent to the gateway as "
                    "X-Min-Policy-Version); unset: exactly `policy_version` (X-Policy-Version).")
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    run_id: str | None = Field(default=None, max_length=RUN_ID_MAX, pattern=RUN_ID_PATTERN)
    metadata: dict[str, Any] = Field(default_factory=dict)
    adaptive: AdaptiveRollouts | None = Field(
        default=None,
        description="Sample each task again only while its results are informative (replaces "
                    "`rollouts_per_task`: starts with `min_rollouts`).",
    )
    on_unsupported: Literal["reject", "skip"] = Field(
        default="reject",
        description="A task using a setup type, getter or metric the runner does not implement: `reject` "
                    "the whole run (422 naming task and feature, nothing enqueued) or `skip` those tasks "
                    "(their rollouts are recorded as `unsupported` and never run).",
    )

    @property
    def initial_rollouts(self) -> int:
        """Rollouts per task enqueued at submission: `adaptive.min_rollouts` or `rollouts_per_task`."""
        return self.adaptive.min_rollouts if self.adaptive else self.rollouts_per_task

    @field_validator("agent")
    @classmethod
    def _agent_known(cls, agent: str) -> str:
        return check_agent_name(agent)  # ValueError naming the known agents

    @field_validator("agent_options")
    @classmethod
    def _agent_options_valid(cls, options: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        agent = info.data.get("agent")
        return options if agent is None else check_agent(agent, options)  # no agent: its own error is shown

    @model_validator(mode="after")
    def _staleness_needs_a_numbered_version(self) -> RunRequest:
        if self.max_staleness is not None:
            if self.policy_version is None:
                raise ValueError("max_staleness needs policy_version")
            min_version_for(self.policy_version, self.max_staleness)  # ValueError naming the problem
        return self

    @model_validator(mode="after")
    def _task_ids_unique(self) -> RunRequest:
        seen: set[str] = set()
        for i, task in enumerate(self.tasks):
            if task.id in seen:
                raise ValueError(f"tasks[{i}].id: duplicate task id {task.id!r}")
            seen.add(task.id)
        return self


class RolloutJob(BaseModel):
    """The payload of one RQ job = one rollout (task x rollout index)."""

    run_id: str = Field(max_length=RUN_ID_MAX, pattern=RUN_ID_PATTERN)
    task: OSWorldTask
    rollout_index: int = Field(ge=0)
    max_steps: int
    agent: str
    agent_options: dict[str, Any] = Field(default_factory=dict)
    model: str
    sampling: SamplingParams
    policy_version: str | None = None
    max_staleness: int | None = None

    @property
    def rollout_id(self) -> str:
        """Globally unique rollout id `{run_id}:{task_id}:{rollout_index}` (sent as `X-Episode-Id`)."""
        return make_rollout_id(self.run_id, self.task.id, self.rollout_index)

    @property
    def job_id(self) -> str:
        """The rollout's deterministic RQ job id (see `rq_job_id`)."""
        return rq_job_id(self.run_id, self.task.id, self.rollout_index)


def make_rollout_id(run_id: str, task_id: str, rollout_index: int) -> str:
    """Deterministic rollout / RQ job id `{run_id}:{task_id}:{rollout_index}` (SPEC section 3)."""
    return f"{run_id}:{task_id}:{rollout_index}"


def rq_job_id(run_id: str, task_id: str, rollout_index: int) -> str:
    """RQ job id of a rollout: `{run_id}__{task_id}__{rollout_index}`.

    RQ 2 accepts only letters, digits, `_` and `-` in job ids, so the SPEC's `:` separators become
    `__`. Run ids never contain `__`, so the mapping is one-to-one.
    """
    return f"{run_id}__{task_id}__{rollout_index}"


def trajectory_prefix(run_id: str, task_id: str, rollout_index: int) -> str:
    """Object-store prefix of one trajectory: `{run_id}/{task_id}_{rollout_index}` (DART layout).

    The rollout's short id inside its run is its index, so the layout is `{task_id}_{rollout_id}`.
    Raises: ValueError when `run_id` or `task_id` is not a valid id (`common.ids`) or the index is
    negative, so an id can never address objects outside its run's prefix.
    """
    if isinstance(rollout_index, bool) or not isinstance(rollout_index, int) or rollout_index < 0:
        raise ValueError(f"rollout_index must be a non-negative integer, got {rollout_index!r}")
    return f"{check_run_id(run_id)}/{check_task_id(task_id)}_{rollout_index}"
