"""Prometheus multiprocess mode for the runner: RQ forks one work-horse per rollout, so metrics
counted in work-horses must be written to shared files that the worker's metrics port sums
(prometheus_client "multiprocess mode"). Standard library only: it must run before
prometheus_client is imported, since that import fixes where values are kept.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: prometheus_client's variable naming the directory of per-process metric files.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def use_multiprocess_metrics() -> Path:
    """Point `PROMETHEUS_MULTIPROC_DIR` at a directory for this worker (a new temporary one unless
    set) and remove metric files a previous worker left there (their counts would be summed in)."""
    given = os.environ.get(MULTIPROC_ENV)
    directory = Path(given) if given else Path(tempfile.mkdtemp(prefix="cua-runner-metrics-"))
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_ENV] = str(directory)
    return directory
