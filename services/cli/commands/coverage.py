"""`cua-rollout coverage`: what an OSWorld task set needs, per domain."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from common.task import load_task_set
from services.cli.app import EXIT_FAILURES, JsonOption, app, console, usage_errors
from services.cli.coverage_view import coverage_markdown, coverage_table, missing_table


@app.command(name="coverage")
def coverage_command(
    path: Annotated[Path, typer.Argument(help="task JSON file, directory, or test_all.json-style index")],
    as_json: JsonOption = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="print the per-domain table as Markdown")] = False,
) -> None:
    """What an OSWorld task set needs: tasks loadable / runnable / offline per domain, missing pieces.

    Per domain: tasks loadable, runnable, offline, needing the internet; and the missing pieces.
    Exits 0 only when every task loads and is runnable (offline or
    explicitly marked by a requirement); the last line is `runnable N/M`."""
    from services.runner.osworld.coverage import coverage as osworld_coverage

    with usage_errors():
        report = osworld_coverage(load_task_set(path))
    if as_json:
        print(report.model_dump_json(indent=2))
    elif markdown:
        print(coverage_markdown(report))
    else:
        console.print(coverage_table(report))
        if report.missing:
            console.print(missing_table(report))
        for item, reason in report.invalid.items():
            console.print(f"[red]invalid[/red] {item}: {reason}", soft_wrap=True)
        for name, why in report.requirements.items():
            console.print(f"needs {name}: {why}", soft_wrap=True)
    print(f"runnable {report.runnable}/{report.total}")
    if not report.complete:
        raise typer.Exit(EXIT_FAILURES)
