"""Rich renderings of run progress and statistics (per task, per domain)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from rich.table import Table

from common.status import EXCLUDED_FROM_SCORE

_EXCLUDED = frozenset(status.value for status in EXCLUDED_FROM_SCORE)


def _fmt_reward(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}"


def matches_expectation(rollout: dict[str, Any], exp: dict[str, Any]) -> bool:
    """True when a rollout's status equals `exp["status"]` and its reward `exp["reward"]` (None: no reward)."""
    want_reward = exp.get("reward")
    got_reward = rollout.get("reward")
    reward_ok = (got_reward is None) if want_reward is None else (
        got_reward is not None and abs(float(got_reward) - float(want_reward)) < 1e-9)
    return bool(rollout["status"] == exp["status"] and reward_ok)


def _expectation_cell(rollout: dict[str, Any], exp: dict[str, Any] | None) -> str:
    """"yes" when status and reward match the script's expectation, else what was expected."""
    if exp is None:
        return "?"
    if matches_expectation(rollout, exp):
        return "[green]yes[/green]"
    return f"[red]no: {exp['status']} / {_fmt_reward(exp.get('reward'))}[/red]"


def rollout_table(run: dict[str, Any], expected: dict[str, dict[str, Any]] | None = None) -> Table:
    """One row per rollout: task, domain, rollout index, status, reward, steps (and the expectation)."""
    table = Table(title=f"run {run['run_id']}")
    table.add_column("task", no_wrap=True)
    for column in ("domain", "rollout", "status", "reward", "steps"):
        table.add_column(column, no_wrap=True)
    if expected is not None:
        table.add_column("as expected", no_wrap=True)
    for r in run.get("rollouts", []):
        row = [r["task_id"], r["domain"], str(r["rollout_index"]), r["status"], _fmt_reward(r["reward"]),
               str(r["num_steps"])]
        if expected is not None:
            exp = expected.get(r["task_id"])
            row.append(_expectation_cell(r, exp))
        table.add_row(*row)
    return table


#: Statuses that are still in flight (everything else is terminal).
_IN_FLIGHT = ("queued", "running")


def _rate(rewards: list[float]) -> str:
    return f"{sum(1 for x in rewards if x >= 1) / len(rewards):.1%}" if rewards else "-"


def _unrated(rollouts: list[dict[str, Any]], excluded: bool) -> str:
    """`2 env_error, 1 runner_error`: terminal rollouts without a reward, by status; those left out of the
    score (`EXCLUDED_FROM_SCORE`) when `excluded`, else those counted 0 in it."""
    counts = Counter(r["status"] for r in rollouts if r.get("reward") is None and r["status"] not in _IN_FLIGHT
                     and (r["status"] in _EXCLUDED) == excluded)
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "-"


def _score(rollouts: list[dict[str, Any]]) -> str:
    """`33.3% (1/3)`: the benchmark score (sum of rewards over the rollouts not left out)."""
    counted = [r for r in rollouts if r["status"] not in _EXCLUDED]
    total = sum(float(r["reward"]) for r in counted if r.get("reward") is not None)
    return f"{total / len(counted):.1%} ({total:g}/{len(counted)})" if counted else "-"


def domain_table(run: dict[str, Any]) -> Table:
    """Per domain and overall: the benchmark score first (sum of rewards / rollouts submitted; a rollout
    without a reward counts 0, listed by status; `unsupported`/`quarantined`/`cancelled` are left out, listed),
    then the success rate over rewarded rollouts (reward >= 1), labelled as such."""
    per_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in run.get("rollouts", []):
        per_domain[r["domain"]].append(r)
    table = Table(title="benchmark score per domain (sum of rewards / rollouts), then success over rewarded")
    for column in ("domain", "score", "counted 0 (no reward)", "left out", "success of rewarded"):
        table.add_column(column)
    everything: list[dict[str, Any]] = []
    for domain in sorted(per_domain):
        rollouts = per_domain[domain]
        everything += rollouts
        table.add_row(domain, *_row(rollouts))
    if everything:
        table.add_row("[b]all[/b]", *_row(everything))
    return table


def _row(rollouts: list[dict[str, Any]]) -> tuple[str, str, str, str]:
    rewards = [float(r["reward"]) for r in rollouts if r.get("reward") is not None]
    return (_score(rollouts), _unrated(rollouts, excluded=False), _unrated(rollouts, excluded=True),
            f"{_rate(rewards)} of {len(rewards)}")
