"""Inside an external agent's sandbox: `python -m services.runner.sandbox_entry --forward PORT=SOCKET ... -- ARGV`.

Opens a `relay.tcp_to_unix` relay per `--forward` (the sandbox's own loopback: its only network), then runs ARGV,
waits for it and exits with its exit code (128 + N when signal N ended it). Run by bubblewrap
(services/runner/external_sandbox.py), never by hand.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from services.runner.relay import tcp_to_unix


def main(argv: list[str] | None = None) -> int:
    """Start the relays, run the program; its exit code. Exit 2 for bad arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forward", action="append", default=[], metavar="PORT=SOCKET")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program to run after --")
    for spec in args.forward:
        port, _, path = spec.partition("=")
        tcp_to_unix(int(port), path)
    code = subprocess.call(program)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
