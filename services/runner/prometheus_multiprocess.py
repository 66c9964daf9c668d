"""Prometheus multiprocess mode for the runner: RQ forks one work-horse per rollout, so metrics
counted in work-horses must be written to shared files that the worker's metrics port sums
(prometheus_client "multiprocess mode"). `use_multiprocess_metrics` must run before prometheus_client is
imported anywhere else, since that import fixes where values are kept.

Files per worker, not per work-horse: with prometheus_client's default (one set of files per process id) every
rollout left its own files behind, so the directory grew by a file per rollout and every scrape read them all,
and each work-horse made its files anew. Here a worker's work-horses, which run one at a time, share one set
(`<type>_<worker pid>h.db`), each reopening it where the one before left off; the worker itself and processes
that are no worker keep their own (`<type>_<pid>.db`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: prometheus_client's variable naming the directory of per-process metric files.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

_worker_pid: int | None = None


def metrics_identity() -> str:
    """Whose metric files this process writes: `<worker pid>h` in a work-horse of a worker (its work-horses run
    one at a time), else its own pid. Distinct for processes that run at the same time, as prometheus_client's
    `MultiProcessValue` requires."""
    pid = os.getpid()
    return f"{_worker_pid}h" if _worker_pid is not None and pid != _worker_pid else str(pid)


def mark_worker() -> None:
    """Call in an RQ worker process before it runs jobs: processes it forks from now on are its work-horses."""
    global _worker_pid
    _worker_pid = os.getpid()


def use_multiprocess_metrics() -> Path:
    """Point `PROMETHEUS_MULTIPROC_DIR` at a directory for this worker (a new temporary one unless
    set), remove metric files a previous worker left there (their counts would be summed in), and make
    prometheus_client keep values in files by `metrics_identity`."""
    given = os.environ.get(MULTIPROC_ENV)
    directory = Path(given) if given else Path(tempfile.mkdtemp(prefix="cua-runner-metrics-"))
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_ENV] = str(directory)
    from prometheus_client import values  # first import: reads the variable set above

    values.ValueClass = values.MultiProcessValue(process_identifier=metrics_identity)
    return directory
