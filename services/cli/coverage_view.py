"""Rich rendering of an OSWorld coverage report (`cua-rollout coverage`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from services.runner.osworld.coverage import CoverageReport


def coverage_table(report: CoverageReport) -> Table:
    """One row per domain: tasks, loadable, runnable, offline, and tasks per requirement; a total row."""
    requirements = sorted({name for d in report.domains for name in d.needs})
    table = Table(title="OSWorld coverage")
    for column in ("domain", "tasks", "loadable", "runnable", "offline", *(f"needs {r}" for r in requirements)):
        table.add_column(column, justify="left" if column == "domain" else "right", no_wrap=True)
    for d in report.domains:
        table.add_row(d.domain, str(d.tasks), str(d.loadable), str(d.runnable), str(d.offline),
                      *(str(d.needs.get(r, 0)) for r in requirements))
    table.add_row("[bold]total[/bold]", str(report.total), str(report.loadable), str(report.runnable),
                  str(report.offline),
                  *(str(sum(d.needs.get(r, 0) for d in report.domains)) for r in requirements))
    return table


def missing_table(report: CoverageReport, limit: int = 40) -> Table:
    """The most used missing pieces (setup types, getters, metrics) with their task counts."""
    table = Table(title=f"missing pieces ({len(report.missing)})")
    table.add_column("feature", no_wrap=True)
    table.add_column("tasks", justify="right")
    for label, count in list(report.missing.items())[:limit]:
        table.add_row(label, str(count))
    return table


def coverage_markdown(report: CoverageReport) -> str:
    """The per-domain table as Markdown (docs/osworld.md's coverage table is this, for test_all.json)."""
    requirements = sorted({name for d in report.domains for name in d.needs})
    lines = ["| domain | tasks | runnable | offline | " + " | ".join(f"needs {r}" for r in requirements) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(requirements)]
    for d in report.domains:
        lines.append(f"| {d.domain} | {d.tasks} | {d.runnable} | {d.offline} | "
                     + " | ".join(str(d.needs.get(r, 0)) for r in requirements) + " |")
    lines.append(f"| **total** | {report.total} | {report.runnable} | {report.offline} | "
                 + " | ".join(str(sum(d.needs.get(r, 0) for d in report.domains)) for r in requirements) + " |")
    return "\n".join(lines)
