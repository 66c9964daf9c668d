"""The `cua-rollout` commands, one module per group; importing this package registers them on `app`."""

from services.cli.commands import stack, runs, results, ops, coverage, audit, cache, init, agents  # noqa: F401, I001  (registration order = help order)
