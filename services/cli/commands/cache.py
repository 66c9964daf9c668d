"""`cua-rollout cache seed|fill|add|standins`: the runners' URL cache, where tasks' downloads come from.

Runners never fetch a task's files over the network (`common.url_cache`); the cache is filled before:
- `seed DIR`: every file named by an `index.json` under DIR (the examples' `examples/fixtures`);
- `fill INDEX`: every URL the tasks of INDEX download, fetched once (needs internet), sha256 and size
  recorded in the cache's `manifest.json`; one line per failed URL, exit 1 when any failed;
- `add URL FILE`: one file as the content of URL (offline);
- `standins INDEX`: a generated stand-in file for every URL of INDEX the cache lacks (offline, deterministic;
  `fill` replaces them with the real files).
The cache directory is `--cache-dir`, else `$RUNNER_CACHE_DIR` (compose's runners: the `url-cache`
volume), else `.cua/stack/cache` (what `cua-rollout up` reads by default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from common.task import load_task_set
from common.task_urls import unique_urls
from services.cli import cache_ops
from services.cli.app import EXIT_FAILURES, app, console, err_console, usage_errors

cache_app = typer.Typer(help="the runners' URL cache: where tasks' downloads come from (no network at run time)",
                        no_args_is_help=True)
app.add_typer(cache_app, name="cache")

CacheDirOption = Annotated[Path, typer.Option(
    "--cache-dir", envvar="RUNNER_CACHE_DIR", show_envvar=True, help="the URL cache directory")]
DEFAULT_CACHE = Path(".cua/stack/cache")


@cache_app.command("seed")
def seed_command(
    fixtures: Annotated[Path, typer.Argument(help="directory with index.json files (URL -> file beside it)")],
    cache_dir: CacheDirOption = DEFAULT_CACHE,
) -> None:
    """Copy every file named by an index.json under FIXTURES into the cache (idempotent)."""
    with usage_errors():
        count = cache_ops.seed(fixtures, cache_dir)
    console.print(f"seeded {count} URLs from {fixtures} into {cache_dir}")


@cache_app.command("fill")
def fill_command(
    index: Annotated[Path, typer.Argument(help="task file, directory, or test_all.json-style index")],
    cache_dir: CacheDirOption = DEFAULT_CACHE,
    timeout: Annotated[float, typer.Option(min=1, help="seconds per download")] = 300,
) -> None:
    """Download every file the tasks of INDEX need that the cache lacks (once; needs internet).

    Exits 1 when a URL could not be fetched (each is printed with its reason)."""
    with usage_errors():
        loaded = load_task_set(index)
        files = unique_urls(task.model_dump() for task in loaded.tasks)
        result = cache_ops.fill(cache_dir, files.values(), timeout_s=timeout)
    for item in loaded.invalid:
        err_console.print(f"skipped invalid task {item.path}: {item.reason}", soft_wrap=True, markup=False)
    for url, reason in result.failed.items():
        err_console.print(f"failed {url}: {reason}", soft_wrap=True, markup=False, highlight=False)
    console.print(f"cache {cache_dir}: {len(result.fetched)} fetched, {len(result.present)} already present, "
                  f"{len(result.failed)} failed, of {len(files)} URLs")
    if result.failed:
        raise typer.Exit(EXIT_FAILURES)


@cache_app.command("add")
def add_command(
    url: Annotated[str, typer.Argument(help="the URL a task downloads")],
    file: Annotated[Path, typer.Argument(help="the file to serve for it")],
    cache_dir: CacheDirOption = DEFAULT_CACHE,
) -> None:
    """Put FILE in the cache as the content of URL (offline use)."""
    with usage_errors():
        path = cache_ops.add(cache_dir, url, file)
    console.print(f"{url} -> {path}")


@cache_app.command("standins")
def standins_command(
    index: Annotated[Path, typer.Argument(help="task file, directory, or test_all.json-style index")],
    cache_dir: CacheDirOption = DEFAULT_CACHE,
    force: Annotated[bool, typer.Option("--force", help="overwrite URLs the cache already holds")] = False,
) -> None:
    """Put a generated stand-in file in the cache for every URL the tasks of INDEX download that it lacks
    (offline; deterministic; recorded in manifest.json as "stand-in"; `cache fill` replaces them)."""
    from services.cli import standins

    with usage_errors():
        loaded = load_task_set(index)
        dumped = [task.model_dump() for task in loaded.tasks]
        files = unique_urls(dumped)
        try:
            result = standins.load(cache_dir, files.values(), force=force, members=standins.archive_members(dumped))
        except RuntimeError as exc:
            raise ValueError(str(exc)) from exc
    console.print(f"cache {cache_dir}: {len(result.generated)} stand-ins generated, {len(result.kept)} URLs "
                  f"already present, of {len(files)} URLs")
