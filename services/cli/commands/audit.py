"""`cua-rollout audit INDEX`: every task runnable offline set up and scored once per built-in agent (do-nothing
agents and the fail agent), all agents in one stack."""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from common.polling import wait_until
from services.cli.api_client import ProducerClient
from services.cli.app import EXIT_FAILURES, JsonOption, app, console, err_console, usage_errors
from services.cli.audit import (
    AGENT_REPLIES,
    AUDIT_MAX_STEPS,
    DOMAIN_COUNTS,
    AuditReport,
    audit_model,
    check_agents,
    outcomes_of,
    prepare_cache,
    select_tasks,
    stored_task_ids,
    write_agent_script,
)
from services.cli.output import watch_run

#: Seconds the sink gets to store a finished run's trajectories (it writes asynchronously; an entry it cannot
#: write is retried 5 times over ~20 s before it goes to the dead letters).
STORE_WAIT_S = 120.0


def wait_stored(client: ProducerClient, run_id: str, task_ids: set[str]) -> set[str]:
    """The ids among `task_ids` whose trajectory the sink stored (a manifest), once all are or after
    `STORE_WAIT_S` seconds."""
    def listed() -> set[str]:  # each listing reads every stored manifest of the run: polled every 2 s
        return stored_task_ids(client.client.trajectories(run_id)) & task_ids

    def all_listed() -> set[str] | None:
        stored = listed()
        return stored if stored == task_ids else None

    with contextlib.suppress(TimeoutError):
        return wait_until(all_listed, STORE_WAIT_S, f"the sink to store run {run_id}'s trajectories", interval_s=2.0)
    return listed()


def _headers(report: AuditReport) -> list[str]:
    """Column titles of the per-domain tables (`DOMAIN_COUNTS` after the domain)."""
    return ["domain", "tasks", "set up", "scored", "stored", f"{report.agent} reward > 0", "not offline"]


def audit_table(report: AuditReport) -> Table:
    """Per domain: tasks audited, set up, scored, stored, reward > 0, not runnable offline; a total row."""
    table = Table(title=f"audit with the {report.agent} agent (tasks runnable offline)")
    for column in _headers(report):
        table.add_column(column, justify="left" if column == "domain" else "right", no_wrap=True)
    rows = report.per_domain()
    for domain, row in rows.items():
        table.add_row(domain, *(str(row[k]) for k in DOMAIN_COUNTS))
    table.add_row("[b]total[/b]", *(str(sum(r[k] for r in rows.values())) for k in DOMAIN_COUNTS))
    return table


def audit_markdown(report: AuditReport) -> str:
    """The per-domain table as Markdown (docs/osworld.md's audit table)."""
    lines = ["| " + " | ".join(_headers(report)) + " |", "|---|" + "---:|" * len(DOMAIN_COUNTS)]
    rows = report.per_domain()
    for domain, row in rows.items():
        lines.append(f"| {domain} | " + " | ".join(str(row[k]) for k in DOMAIN_COUNTS) + " |")
    lines.append("| **total** | " + " | ".join(str(sum(r[k] for r in rows.values())) for k in DOMAIN_COUNTS) + " |")
    return "\n".join(lines)


@app.command(name="audit")
def audit_command(
    index: Annotated[Path, typer.Argument(help="task file, directory, or test_all.json-style index")],
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", help=f"built-in agent, repeatable (one run each, same stack): {', '.join(AGENT_REPLIES)}")] = None,
    as_json: JsonOption = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="also print the per-domain table as Markdown")] = False,
    envs: Annotated[int, typer.Option(min=1, help="local desktop envs (and runner workers)")] = 2,
    per_domain: Annotated[int | None, typer.Option(min=1, help="only the first N offline tasks of each domain")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", help="only this task id or id prefix (repeatable)")]
    = None,
    work_dir: Annotated[Path, typer.Option(help="logs, envs and trajectories")] = Path(".cua/audit"),
    cache_dir: Annotated[Path, typer.Option(
        "--cache-dir", envvar="RUNNER_CACHE_DIR", show_envvar=True,
        help="the URL cache (stand-ins are added for URLs it lacks)")] = Path(".cua/stack/cache"),
    timeout: Annotated[float, typer.Option(min=1, help="seconds before giving up on the run")] = 14400,
) -> None:
    """Run every task of INDEX that `coverage` counts runnable offline once through the whole stack with each
    built-in agent given (default noop: finished() at step 0; garbage: a reply no agent parses; stall:
    wait() until max steps; fail: call_user(), OSWorld's FAIL, at step 0), one run per agent in one stack.

    Prints per agent and domain: set up / scored / stored / reward > 0; each task not set up, not scored, not
    stored or with a reward, with its reason; the tasks not runnable offline with theirs. Last lines, one per
    agent: `audit: set up N/M, scored N/M, stored N/M, noop nonzero K`. With --json and several agents, one JSON
    object `{"reports": [...]}`. Exits 1 unless every task was set up, scored and stored and (do-nothing
    agents) no reward > 0 is unexplained."""
    from services.cli.stack import LocalStack, StackConfig

    with usage_errors():
        agents = check_agents(agent or ["noop"])
        selection = select_tasks(index, per_domain=per_domain, only=task)
        if not selection.audited:
            raise ValueError(f"{index}: no task runnable offline to audit")
        made = prepare_cache(cache_dir, selection.audited)
    out = err_console if as_json else console
    out.print(f"auditing {len(selection.audited)} tasks with the {', '.join(agents)} agent(s) on {envs} envs "
              f"({len(selection.skipped)} not runnable offline; {made} stand-in files added to {cache_dir})")
    started = time.monotonic()
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="cua-audit-scripts-") as scripts:
        for name in agents:
            write_agent_script(Path(scripts), name)
        config = StackConfig(work_dir=work_dir, scripts_dir=Path(scripts), envs=envs, runners=envs, replicas=1,
                             cache_dir=cache_dir, fixtures_dir=None)
        with usage_errors(), LocalStack(config) as stack, ProducerClient(stack.producer_url) as client:
            run_ids = {name: client.submit(selection.audited, rollouts_per_task=1, max_steps=AUDIT_MAX_STEPS,
                                           model=audit_model(name))["run_id"] for name in agents}
            deadline = time.monotonic() + timeout
            for name, run_id in run_ids.items():
                runs[name] = watch_run(client, run_id, max(1.0, deadline - time.monotonic()), out)
            stored = {name: wait_stored(client, run_id, {t.id for t in selection.audited})
                      for name, run_id in run_ids.items()}
    seconds = time.monotonic() - started
    reports = [AuditReport(agent=name, outcomes=outcomes_of(runs[name], selection.audited, stored[name]),
                           skipped=selection.skipped, seconds=seconds) for name in agents]
    if as_json:
        document = reports[0].to_json() if len(reports) == 1 else {"reports": [r.to_json() for r in reports]}
        print(json.dumps(document, indent=2))
    else:
        for report in reports:
            print_report(report, markdown)
    for report in reports:
        print(report.summary_line())
    if not all(report.passed() for report in reports):
        raise typer.Exit(EXIT_FAILURES)


def print_report(report: AuditReport, markdown: bool) -> None:
    """The per-domain table, the tasks with a problem or a reward (with reasons), the tasks not audited."""
    console.print(audit_table(report))
    if markdown:
        print(audit_markdown(report))
    for o in report.problems():
        what = "not set up" if not o.set_up else "not scored" if not o.scored else \
            "not stored (the sink's dead letters say why)" if not o.stored else f"reward {o.reward:g}"
        explained = report.explanation(o)
        reason = f"explained: {explained}" if explained else (o.error or o.status)
        console.print(f"{o.domain}/{o.task_id}: {what} ({o.status}): {reason}", soft_wrap=True, markup=False,
                      highlight=False)
    for task_id, item in report.skipped.items():
        console.print(f"not offline {item['domain']}/{task_id}: {item['reason']}", soft_wrap=True, markup=False,
                      highlight=False)
    console.print(f"audit took {report.seconds / 60:.1f} min")
