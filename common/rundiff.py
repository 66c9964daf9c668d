"""Compare two runs task by task: fixed / broken / unchanged, with a significance test per domain
(what `GET /v1/runs/{a}/diff/{b}` and `cua-rollout diff A B` show).

A task is *solved* in a run when at least half of its rewarded rollouts succeed (reward >= 1); with
one rollout per task that is plain success. `fixed`: unsolved in A, solved in B; `broken`: the
reverse; `unchanged`: same on both; tasks rewarded in only one run are listed as `only_a`/`only_b`.
Per domain, the rollout-level success counts of A and B are compared with Fisher's exact test
(two-sided; scipy.stats.fisher_exact), which stays exact for the small counts of a benchmark domain.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel

from common.runstate import RolloutRecord
from common.stats import is_success

Change = Literal["fixed", "broken", "unchanged", "only_a", "only_b"]


class TaskDiff(BaseModel):
    """One task: success counts (`successes`/`n` of rewarded rollouts) in A and B and the change."""

    task_id: str
    domain: str
    a_successes: int
    a_n: int
    b_successes: int
    b_n: int
    change: Change


class DomainDiff(BaseModel):
    """One domain: rollout success rates in A and B, their difference (B - A) and Fisher's exact
    two-sided p-value of the 2x2 table [[a_succ, a_fail], [b_succ, b_fail]]."""

    domain: str
    a_rate: float | None
    b_rate: float | None
    delta: float | None
    p_value: float | None
    fixed: int
    broken: int
    unchanged: int


class RunDiff(BaseModel):
    """The comparison of run `run_a` (before) with `run_b` (after)."""

    run_a: str
    run_b: str
    counts: dict[str, int]
    domains: list[DomainDiff]
    tasks: list[TaskDiff]


def _per_task(records: Iterable[RolloutRecord]) -> dict[str, tuple[str, int, int]]:
    """task id -> (domain, successes, rewarded rollouts), terminal rewarded rollouts only."""
    out: dict[str, tuple[str, int, int]] = {}
    for r in records:
        if not r.status.is_terminal or r.reward is None:
            continue
        domain, successes, n = out.get(r.task_id, (r.domain, 0, 0))
        out[r.task_id] = (domain, successes + int(is_success(r)), n + 1)
    return out


def _change(a: tuple[str, int, int] | None, b: tuple[str, int, int] | None) -> Change:
    if a is None:
        return "only_b"
    if b is None:
        return "only_a"
    solved_a, solved_b = 2 * a[1] >= a[2], 2 * b[1] >= b[2]
    if solved_a == solved_b:
        return "unchanged"
    return "fixed" if solved_b else "broken"


def diff_runs(run_a: str, records_a: Iterable[RolloutRecord], run_b: str,
              records_b: Iterable[RolloutRecord]) -> RunDiff:
    """Task-by-task and per-domain comparison of two runs' rollout records (see module docstring)."""
    tasks_a, tasks_b = _per_task(records_a), _per_task(records_b)
    tasks: list[TaskDiff] = []
    for task_id in sorted(set(tasks_a) | set(tasks_b)):
        a, b = tasks_a.get(task_id), tasks_b.get(task_id)
        domain = (a or b or ("default", 0, 0))[0]
        tasks.append(TaskDiff(task_id=task_id, domain=domain, a_successes=a[1] if a else 0, a_n=a[2] if a else 0,
                              b_successes=b[1] if b else 0, b_n=b[2] if b else 0, change=_change(a, b)))
    by_domain: dict[str, list[TaskDiff]] = defaultdict(list)
    for task in tasks:
        by_domain[task.domain].append(task)
    counts = {change: sum(1 for t in tasks if t.change == change)
              for change in ("fixed", "broken", "unchanged", "only_a", "only_b")}
    return RunDiff(run_a=run_a, run_b=run_b, counts=counts,
                   domains=[_domain_diff(d, ts) for d, ts in sorted(by_domain.items())], tasks=tasks)


def _domain_diff(domain: str, tasks: list[TaskDiff]) -> DomainDiff:
    a_s, a_n = sum(t.a_successes for t in tasks), sum(t.a_n for t in tasks)
    b_s, b_n = sum(t.b_successes for t in tasks), sum(t.b_n for t in tasks)
    a_rate = a_s / a_n if a_n else None
    b_rate = b_s / b_n if b_n else None
    p_value = None
    if a_n and b_n:
        from scipy.stats import fisher_exact  # ~0.5 s to import: only when two runs are compared

        p_value = float(fisher_exact([[a_s, a_n - a_s], [b_s, b_n - b_s]], alternative="two-sided").pvalue)
    return DomainDiff(domain=domain, a_rate=a_rate, b_rate=b_rate,
                      delta=b_rate - a_rate if a_rate is not None and b_rate is not None else None,
                      p_value=p_value, fixed=sum(1 for t in tasks if t.change == "fixed"),
                      broken=sum(1 for t in tasks if t.change == "broken"),
                      unchanged=sum(1 for t in tasks if t.change == "unchanged"))
