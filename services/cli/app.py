"""The `cua-rollout` Typer app, its consoles, shared options, and its exit-code contract.

Exit codes: 0 success; 1 a run finished with failures (`--fail-on-error`) or a command's own check
failed (`demo`, `coverage`); 2 usage or connection errors, each printed as ONE line on stderr
(`error: <what is wrong>`), including click's own usage errors (unknown option, missing argument).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from typing import Annotated, Any, NoReturn

import httpx
import typer
from rich.console import Console

from cua_rollout.client import RolloutClientError

try:  # typer >= 0.22 vendors click as `typer._click`; older typer uses click itself
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exceptions  # type: ignore[no-redef]

#: Exit codes a script can rely on.
EXIT_OK, EXIT_FAILURES, EXIT_USAGE = 0, 1, 2
DEFAULT_PRODUCER = "http://127.0.0.1:8080"
PRODUCER_ENV = "CUA_PRODUCER"

console = Console()
if not console.is_terminal:  # piped or CI logs: 80 columns would truncate task ids
    console.width = 120
err_console = Console(stderr=True)

#: `--producer URL` of every client command, defaulting to `$CUA_PRODUCER`, then 127.0.0.1:8080.
ProducerOption = Annotated[str, typer.Option("--producer", envvar=PRODUCER_ENV, show_envvar=True,
                                             help="producer URL")]
#: `--json`: print the API's JSON answer (stdout) instead of tables.
JsonOption = Annotated[bool, typer.Option("--json", help="print the API's JSON instead of tables")]


def one_line(message: object) -> str:
    """`message` as a single line (newlines and runs of blanks collapsed to one space)."""
    return " ".join(str(message).split())


def fail(message: object, code: int = EXIT_USAGE) -> NoReturn:
    """Print `error: <message>` as one line on stderr and exit with `code` (2: usage/connection)."""
    print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
    raise typer.Exit(code)


@contextmanager
def usage_errors() -> Iterator[None]:
    """Turn the errors a user can cause (producer unreachable or refusing: `RolloutClientError`, also
    raised as `ProducerError` by the CLI's dict client; bad input; a timeout) into a one-line message
    and exit code 2. Anything else is a bug and keeps its traceback."""
    try:
        yield
    except (RolloutClientError, httpx.HTTPError, ValueError, TimeoutError) as exc:
        fail(exc)


def package_version() -> str:
    """The installed `cua-rollout` distribution's version ("unknown" when not installed)."""
    try:
        return metadata.version("cua-rollout")
    except metadata.PackageNotFoundError:
        return "unknown"


class CliApp(typer.Typer):
    """A Typer app whose usage errors are one line (`error: Missing argument 'RUN_ID' (see 'cua-rollout
    cancel --help')`) with exit code 2, instead of click's multi-line usage box."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        command = typer.main.get_command(self)
        kwargs.setdefault("prog_name", "cua-rollout")
        kwargs["standalone_mode"] = False
        try:
            code = command.main(*args, **kwargs)
        except click_exceptions.NoArgsIsHelpError as exc:  # `cua-rollout` alone: the help, as usage error
            print(exc.ctx.get_help() if exc.ctx else exc.format_message(), file=sys.stderr)
            sys.exit(EXIT_USAGE)
        except click_exceptions.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
            print(f"error: {one_line(exc.format_message())}{hint}", file=sys.stderr)
            sys.exit(EXIT_USAGE)
        except click_exceptions.ClickException as exc:
            print(f"error: {one_line(exc.format_message())}", file=sys.stderr)
            sys.exit(exc.exit_code)
        except typer.Abort:
            print("aborted", file=sys.stderr)
            sys.exit(130)
        sys.exit(code if isinstance(code, int) else EXIT_OK)


app = CliApp(add_completion=False, no_args_is_help=True,
             help="cua-rollout: run computer-use agents at scale. Exit codes: 0 success, 1 a run finished "
                  "with failures (--fail-on-error), 2 usage or connection error (one line on stderr).")


def _print_version(value: bool) -> None:
    if value:
        print(f"cua-rollout {package_version()}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                          help="print the version and exit")] = False,
) -> None:
    """cua-rollout: run computer-use agents at scale."""
