"""`cua-rollout`: the Typer app with every command registered (the console script's entry point).

Commands live in `services/cli/commands/` (stack: up, demo; runs: submit, watch, stats, runs,
cancel; ops: envs, queues, trajectory; coverage; audit; cache; agents); the app and its exit-code contract in `app.py`.
`load_expectations` and `mismatches` are re-exported for the tests that import them from here.
"""

from __future__ import annotations

import services.cli.commands  # noqa: F401  (registers every command on `app`)
from services.cli.app import app
from services.cli.commands.stack import load_expectations, mismatches

__all__ = ["app", "load_expectations", "mismatches"]

if __name__ == "__main__":
    app()
