"""Output shared by the commands: the API's JSON for scripts, and the live progress of a run."""

from __future__ import annotations

import json
import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from services.cli.api_client import ProducerClient
from services.cli.ops_views import score_line

#: Seconds between two polls of `GET /v1/runs/{id}` while a progress bar is shown.
POLL_INTERVAL_S = 0.5


def print_json(data: Any) -> None:
    """The API's JSON, indented, on stdout (never wrapped or coloured: scripts parse it)."""
    print(json.dumps(data, indent=2))


def watch_run(client: ProducerClient, run_id: str, timeout_s: float, out: Console) -> dict[str, Any]:
    """Show a progress bar (queued / running / done, success rate) on `out` until the run finishes;
    returns the finished run (`GET /v1/runs/{id}`).

    Raises: TimeoutError after `timeout_s` seconds; ProducerError when the producer fails.
    """
    deadline = time.monotonic() + timeout_s
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[detail]}"), console=out, transient=False) as progress:
        bar = progress.add_task(f"run {run_id}", total=None, detail="")
        while True:
            run = client.run(run_id)
            counts = run["counts"]
            detail = (f"queued {counts.get('queued', 0)}  running {counts.get('running', 0)}  done {run['done']}"
                      f"  {score_line(run)}")
            progress.update(bar, total=run["total"], completed=run["done"], detail=detail)
            if run["finished"]:
                return run
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} not finished after {timeout_s:.0f}s: {detail}")
            time.sleep(POLL_INTERVAL_S)  # polling interval of the progress display
