"""Flaky tasks across runs: tasks whose outcome varies under one policy version, or that often end
in infrastructure failures (what `GET /v1/flaky` and `cua-rollout flaky` list).

Under one policy version a deterministic-enough task either succeeds or fails; with temperature 0
and a scripted or greedy policy, a task that does both is flaky (its environment, timing or checker
varies). Only policy versions seen in at least `min_runs` runs count as evidence of flakiness, so
the spread within a single sampled run (pass@k) is not mistaken for it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from common.runstate import RolloutRecord

#: A task whose infrastructure failure rate reaches this is listed (fraction of its ended rollouts).
INFRA_RATE_THRESHOLD = 0.2


class FlakyTask(BaseModel):
    """One task under one policy version (`None`: runs without a version) across `runs` runs:
    `rollouts` ended, `success_rate` of the rewarded ones, `infra_failure_rate` of all ended, and
    why it is listed (`outcome varies`, `infrastructure failures`)."""

    task_id: str
    policy_version: str | None
    runs: int
    rollouts: int
    success_rate: float | None
    infra_failure_rate: float
    reasons: list[str]


class FlakyReport(BaseModel):
    """Flaky tasks among the newest `runs` runs (`GET /v1/flaky`)."""

    runs: int
    tasks: list[FlakyTask]


def flaky_tasks(runs: Iterable[tuple[str, str | None, Iterable[RolloutRecord]]], min_runs: int = 2,
                infra_threshold: float = INFRA_RATE_THRESHOLD) -> list[FlakyTask]:
    """Flaky tasks among `runs`, given as (run id, policy version, its rollout records); most
    unstable first (success rate closest to 1/2, then infrastructure failure rate)."""
    ended: dict[tuple[str, str | None], list[RolloutRecord]] = defaultdict(list)
    seen_in: dict[tuple[str, str | None], set[str]] = defaultdict(set)
    for run_id, version, records in runs:
        for record in records:
            if record.status.is_terminal and record.status.value not in ("cancelled", "unsupported", "quarantined"):
                ended[(record.task_id, version)].append(record)
                seen_in[(record.task_id, version)].add(run_id)
    out = []
    for (task_id, version), records in ended.items():
        rewards = [r.reward for r in records if r.reward is not None]
        successes = sum(1 for reward in rewards if reward >= 1.0)
        success_rate = successes / len(rewards) if rewards else None
        infra_rate = sum(1 for r in records if r.status.is_infra_failure) / len(records)
        reasons = []
        if len(seen_in[(task_id, version)]) >= min_runs and 0 < successes < len(rewards):
            reasons.append("outcome varies")
        if infra_rate >= infra_threshold:
            reasons.append("infrastructure failures")
        if reasons:
            out.append(FlakyTask(task_id=task_id, policy_version=version, runs=len(seen_in[(task_id, version)]),
                                 rollouts=len(records), success_rate=success_rate, infra_failure_rate=infra_rate,
                                 reasons=reasons))
    return sorted(out, key=lambda t: (abs((t.success_rate if t.success_rate is not None else 0.0) - 0.5),
                                      -t.infra_failure_rate, t.task_id))
