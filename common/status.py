"""Terminal status taxonomy of a rollout (SPEC section 4, extended: see docs/ARCHITECTURE.md "Statuses")."""

from __future__ import annotations

from enum import StrEnum


class RolloutStatus(StrEnum):
    """Exactly one terminal status per rollout; plus the non-terminal `queued` and `running`.

    Reward is a float for `completed`, `agent_fail`, `truncated` and `parse_error`, and null otherwise;
    only those count in the success rate.
    `model_error`, `env_error` and `env_init_failed` are infrastructure failures: retried on another
    env and never counted as policy failures.
    The deterministic failures are never retried (the same task would fail the same way):
    `setup_error` (a task `config` step failed: bad parameters, a file missing from the URL cache),
    `eval_error` (the evaluator failed: bad evaluator config, missing expected file),
    `unsupported` (the producer skipped the task: it uses a setup type, getter or metric that is not
    implemented; nothing ran), `quarantined` (the producer skipped the task: it is on the quarantine
    list of flaky tasks; nothing ran) and `runner_error` (an unexpected exception: a bug in the runner or a
    checker; the traceback is in the rollout's `error` and RQ's failed-job registry).
    `parse_error`: the agent ended the episode because it could not read the model's reply, after its
    re-samples (`ui_tars_1_5`, as OSWorld's UI-TARS agent: the episode ends as `DONE`); it is scored as
    OSWorld scores it (0 on an infeasible task: an unreadable reply is never the model's FAIL,
    docs/scoring.md). Agents that go on after such a reply (OSWorld's prompt agent, Qwen) end as usual.
    Records of runs from before this rule may hold `parse_error` without a reward.
    """

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    AGENT_FAIL = "agent_fail"
    TRUNCATED = "truncated"
    PARSE_ERROR = "parse_error"
    MODEL_ERROR = "model_error"
    ENV_ERROR = "env_error"
    ENV_INIT_FAILED = "env_init_failed"
    SETUP_ERROR = "setup_error"
    EVAL_ERROR = "eval_error"
    UNSUPPORTED = "unsupported"
    QUARANTINED = "quarantined"
    RUNNER_ERROR = "runner_error"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        """True for every status except `queued` and `running`."""
        return self not in (RolloutStatus.QUEUED, RolloutStatus.RUNNING)

    @property
    def has_reward(self) -> bool:
        """True when the rollout carries a float reward (the policy's own outcome)."""
        return self in REWARDED_STATUSES

    @property
    def is_infra_failure(self) -> bool:
        """True for failures of the infrastructure, which are retried and not policy failures."""
        return self in INFRA_FAILURES

    @property
    def is_bug(self) -> bool:
        """True for `runner_error`: an unexpected exception, shown loudly, never retried."""
        return self is RolloutStatus.RUNNER_ERROR


REWARDED_STATUSES = frozenset(
    {RolloutStatus.COMPLETED, RolloutStatus.AGENT_FAIL, RolloutStatus.TRUNCATED, RolloutStatus.PARSE_ERROR}
)
INFRA_FAILURES = frozenset(
    {RolloutStatus.MODEL_ERROR, RolloutStatus.ENV_ERROR, RolloutStatus.ENV_INIT_FAILED}
)
#: Failures that repeat on every attempt: never retried, no reward, not in the success rate.
DETERMINISTIC_FAILURES = frozenset(
    {RolloutStatus.SETUP_ERROR, RolloutStatus.EVAL_ERROR, RolloutStatus.UNSUPPORTED, RolloutStatus.RUNNER_ERROR}
)
TERMINAL_STATUSES = frozenset(s for s in RolloutStatus if s.is_terminal)
#: Rollouts that never ran by decision: left out of the benchmark score's denominator (and listed). Every
#: other submitted rollout counts, a failure without a reward as 0 (as OSWorld's leaderboard counts).
EXCLUDED_FROM_SCORE = frozenset({RolloutStatus.UNSUPPORTED, RolloutStatus.QUARANTINED, RolloutStatus.CANCELLED})
