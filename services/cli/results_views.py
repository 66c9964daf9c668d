"""Rich tables of run statistics and run diffs (`cua-rollout stats`, `cua-rollout diff`)."""

from __future__ import annotations

from rich.table import Table

from common.flaky import FlakyReport
from common.rundiff import RunDiff
from common.stats import BenchmarkScore, Rate, RunStats


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _rate_cells(rate: Rate) -> tuple[str, str, str]:
    interval = "-" if rate.low is None or rate.high is None else f"[{_pct(rate.low)}, {_pct(rate.high)}]"
    return f"{rate.successes}/{rate.n}", _pct(rate.rate), interval


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {status}" for status, n in counts.items()) or "-"


def _score_cells(score: BenchmarkScore) -> tuple[str, str, str, str]:
    left_out = _counts({**score.excluded, **({"pending": score.pending} if score.pending else {})})
    return f"{score.total_reward:g}/{score.n}", _pct(score.score), _counts(score.zero), left_out


def score_table(stats: RunStats) -> Table:
    """The benchmark score per domain and overall: sum of rewards / rollouts submitted, with the rollouts
    counted 0 (no reward: infrastructure failures that exhausted their retries, errors) and those left
    out (never ran by decision) listed by status."""
    table = Table(title=f"run {stats.run_id}: benchmark score (sum of rewards / rollouts submitted)")
    for column in ("domain", "reward", "score", "counted 0 (no reward)", "left out"):
        table.add_column(column)
    for domain, score in stats.domain_scores.items():
        table.add_row(domain, *_score_cells(score))
    table.add_row("[b]all[/b]", *_score_cells(stats.score))
    return table


def success_table(stats: RunStats) -> Table:
    """Success over rewarded rollouts per domain and overall, with Wilson 95 % intervals."""
    table = Table(title="success rate over rewarded rollouts only (reward >= 1), Wilson 95% interval")
    for column in ("domain", "solved", "rate", "95% interval"):
        table.add_column(column)
    for domain, rate in stats.domains.items():
        table.add_row(domain, *_rate_cells(rate))
    table.add_row("[b]all[/b]", *_rate_cells(stats.overall))
    return table


def detail_table(stats: RunStats) -> Table:
    """pass@k, failures kept out of the rate, latency p50/p95 per part and cost per success."""
    table = Table(title="pass@k, failures, latency (ms) and cost per success")
    table.add_column("measure")
    table.add_column("value")
    for k, pass_k in stats.pass_at_k.items():
        table.add_row(f"pass@{k}", _pct(pass_k))
    table.add_row("infrastructure failures", str(stats.infra_failures))
    for status, count in stats.unrewarded.items():
        table.add_row(f"no reward: {status}", str(count))
    for part, pct in stats.latency_ms.items():
        cells = "-" if pct.p50 is None or pct.p95 is None else f"p50 {pct.p50:.0f}  p95 {pct.p95:.0f}"
        table.add_row(part, cells)
    cost = stats.cost_per_success
    costs: list[tuple[str, float | None]] = [("env-seconds / success", cost.env_seconds),
                                              ("model-seconds / success", cost.model_seconds),
                                              ("tokens / success", cost.tokens)]
    for name, value in costs:
        table.add_row(name, "-" if value is None else f"{value:.1f}")
    return table


#: How `utilisation_table` names the env states of `common.envtime.ENV_STATES`.
ENV_STATE_LABELS = {"in_step": "in steps", "startup": "start-up", "reset": "reset", "evaluation": "evaluation"}


def utilisation_table(stats: RunStats) -> Table:
    """The run's env time split: in steps / start-up / reset / evaluation, share and seconds."""
    usage = stats.env_utilisation
    table = Table(title=f"env utilisation: {usage.env_seconds:.1f} env-seconds held by the run's rollouts")
    for column in ("env time", "share", "seconds"):
        table.add_column(column)
    for state, share in usage.shares.items():
        table.add_row(ENV_STATE_LABELS.get(state, state), _pct(share), f"{share * usage.env_seconds:.1f}")
    if not usage.shares:
        table.add_row("no timings recorded", "-", "-")
    return table


def diff_table(diff: RunDiff) -> Table:
    """Per domain: success A -> B, change, fixed/broken/unchanged tasks and Fisher's exact p-value."""
    table = Table(title=f"{diff.run_a} -> {diff.run_b} (Fisher's exact test per domain)")
    for column in ("domain", "A", "B", "delta", "fixed", "broken", "unchanged", "p-value"):
        table.add_column(column)
    for d in diff.domains:
        delta = "-" if d.delta is None else f"{100 * d.delta:+.1f} pt"
        p_value = "-" if d.p_value is None else f"{d.p_value:.3g}"
        table.add_row(d.domain, _pct(d.a_rate), _pct(d.b_rate), delta, str(d.fixed), str(d.broken),
                      str(d.unchanged), p_value)
    return table


def flaky_table(report: FlakyReport) -> Table:
    """Flaky tasks with their success and infrastructure failure rates (`GET /v1/flaky`)."""
    tasks = report.tasks
    table = Table(title=f"flaky tasks over the newest {report.runs} runs")
    for column in ("task", "policy version", "runs", "rollouts", "success", "infra failures", "why"):
        table.add_column(column)
    for t in tasks:
        table.add_row(t.task_id, t.policy_version or "-", str(t.runs), str(t.rollouts), _pct(t.success_rate),
                      _pct(t.infra_failure_rate), ", ".join(t.reasons))
    return table
