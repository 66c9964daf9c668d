"""`cua-rollout init`: the `.env` a compose deployment needs (random secrets; see `common.env_file`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from common.env_file import write_env_file
from services.cli.app import app, console, fail


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="the file to write")] = Path(".env"),
    force: Annotated[bool, typer.Option("--force", help="replace an existing file's secrets")] = False,
) -> None:
    """Write .env with random secrets for docker compose (producer token, gateway keys, S3 credentials).

    Exits 2 when the file exists (its secrets may be in use) unless --force."""
    try:
        write_env_file(path, force)
    except FileExistsError as exc:
        fail(exc)
    console.print(f"wrote {path} (mode 600). Next: docker compose up --wait; "
                  f"the CLI reads the producer token from CUA_TOKEN (export CUA_TOKEN=<PRODUCER_TOKEN from {path}>)")
