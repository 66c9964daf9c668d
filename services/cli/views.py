"""Rich renderings of run progress and statistics (per task, per domain)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from rich.table import Table


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


def _unrated(rollouts: list[dict[str, Any]]) -> str:
    """`2 unsupported, 1 runner_error`: terminal rollouts without a reward, by status."""
    counts = Counter(r["status"] for r in rollouts if r.get("reward") is None and r["status"] not in _IN_FLIGHT)
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "-"


def domain_table(run: dict[str, Any]) -> Table:
    """Success rate per domain (rollouts with a reward; reward >= 1 counts as success) and overall,
    with the finished rollouts left out of the rate (no reward: unsupported, errors) counted by status."""
    per_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in run.get("rollouts", []):
        per_domain[r["domain"]].append(r)
    table = Table(title="success rate per domain")
    table.add_column("domain")
    table.add_column("rollouts")
    table.add_column("success rate")
    table.add_column("not in the rate")
    everything: list[dict[str, Any]] = []
    for domain in sorted(per_domain):
        rollouts = per_domain[domain]
        everything += rollouts
        rewards = [float(r["reward"]) for r in rollouts if r.get("reward") is not None]
        table.add_row(domain, str(len(rewards)), _rate(rewards), _unrated(rollouts))
    if everything:
        rewards = [float(r["reward"]) for r in everything if r.get("reward") is not None]
        table.add_row("[b]all[/b]", str(len(rewards)), _rate(rewards), _unrated(everything))
    return table
