"""The `.env` of a compose deployment: random secrets for every credential docker-compose.yml requires.

`python3 -m common.env_file [PATH] [--force]` (`make env`) and `cua-rollout init` write it: standard
library only, so it runs before anything is installed. An existing file is never overwritten without
`--force` (its secrets may already be in a Redis, a bucket or a trainer's config).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

#: Variables docker-compose.yml refuses to start without (`${VAR:?}`), and how many random bytes each gets.
SECRETS = {
    "PRODUCER_TOKEN": 32,  # bearer token of the producer's API (the CLI sends $CUA_TOKEN)
    "GATEWAY_API_KEY": 32,  # bearer token of the gateway's OpenAI routes (OpenAI clients: a trainer, a script)
    "GATEWAY_RUNNER_KEY": 32,  # the runners' gateway key: OpenAI routes and sessions naming a rollout
    "GATEWAY_ADMIN_TOKEN": 32,  # bearer token of the gateway's /admin routes
    "S3_ACCESS_KEY": 12,  # MinIO's root user
    "S3_SECRET_KEY": 32,  # MinIO's root password
    "RUNNER_S3_ACCESS_KEY": 12,  # the runners' MinIO user: PutObject on trajectories/_blobs/* only
    "RUNNER_S3_SECRET_KEY": 32,
    "REDIS_PASSWORD": 32,  # Redis AUTH of every service (URL-safe: it goes in REDIS_URL)
}


def render(values: dict[str, str]) -> str:
    """The file's text: a header, then `NAME=value` lines."""
    lines = ["# cua-rollout compose secrets (written by `make env` / `cua-rollout init`); keep this file private.",
             "# Point the CLI at the producer: export CUA_TOKEN=$PRODUCER_TOKEN",
             "# Published ports listen on 127.0.0.1; to open them: CUA_BIND_ADDRESS=0.0.0.0"]
    lines += [f"{name}={value}" for name, value in values.items()]
    return "\n".join(lines) + "\n"


def write_env_file(path: Path, force: bool = False) -> dict[str, str]:
    """Write `path` (mode 0600) with a fresh random value for each of `SECRETS`; returns them.

    Raises: FileExistsError when `path` exists and not `force`."""
    if path.exists() and not force:
        raise FileExistsError(f"{path} exists: keep it, or pass --force to replace its secrets")
    values = {name: secrets.token_urlsafe(size) for name, size in SECRETS.items()}
    values["S3_ACCESS_KEY"] = "cua-" + secrets.token_hex(SECRETS["S3_ACCESS_KEY"])  # MinIO: no '-_' start
    values["RUNNER_S3_ACCESS_KEY"] = "cua-runner-" + secrets.token_hex(SECRETS["RUNNER_S3_ACCESS_KEY"])
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(render(values))
    os.chmod(path, 0o600)
    return values


def main(argv: list[str] | None = None) -> int:
    """Command line of `make env`; returns the exit code (2 when the file exists)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=Path(".env"))
    parser.add_argument("--force", action="store_true", help="replace an existing file's secrets")
    args = parser.parse_args(argv)
    try:
        write_env_file(args.path, args.force)
    except FileExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.path} with random secrets; then: docker compose up --wait")
    return 0


if __name__ == "__main__":
    sys.exit(main())
