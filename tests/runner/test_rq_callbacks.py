"""The import paths the producer enqueues by name (`common.run`) name the runner's real functions."""

from __future__ import annotations

import importlib

from common.run import ON_FAILURE_CALLBACK, ROLLOUT_JOB_FUNC


def test_enqueued_import_paths_resolve_to_the_runners_functions() -> None:
    for path in (ROLLOUT_JOB_FUNC, ON_FAILURE_CALLBACK):
        module, _, name = path.rpartition(".")
        assert callable(getattr(importlib.import_module(module), name)), path
