"""What an OSWorld task set needs from this layer: per domain, tasks loadable / runnable / runnable
offline / needing a requirement (internet, Google Drive, ...), and the missing pieces with their task
counts. Backs `cua-rollout coverage INDEX`.

A task is *runnable* when it loads and every setup type, getter and metric it uses is implemented;
*offline* when it is runnable and needs nothing beyond an env pod and the URL cache; otherwise its
requirements (see `requirements.EXPLANATIONS`) mark it explicitly.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from pydantic import BaseModel, Field

from common.task import LoadedTasks
from services.runner.osworld.requirements import EXPLANATIONS
from services.runner.osworld.support import task_requirements, unsupported_features


class DomainCoverage(BaseModel):
    """Counts of one domain (task counts, not feature counts)."""

    domain: str
    tasks: int = 0
    loadable: int = 0
    runnable: int = 0
    offline: int = 0
    needs: dict[str, int] = Field(default_factory=dict, description="requirement -> runnable tasks needing it")


class CoverageReport(BaseModel):
    """Coverage of a task set. `missing`: feature label -> number of tasks using it (most used first);
    `invalid`: task path -> why it does not load; `requirements`: requirement -> explanation."""

    domains: list[DomainCoverage]
    total: int
    loadable: int
    runnable: int
    offline: int
    missing: dict[str, int]
    invalid: dict[str, str]
    requirements: dict[str, str]

    @property
    def complete(self) -> bool:
        """True when every task loads and is runnable (offline, or marked by its requirements)."""
        return self.loadable == self.total and self.runnable == self.total


def coverage(loaded: LoadedTasks) -> CoverageReport:
    """The coverage of the tasks `loaded` by `common.task.load_task_set` (invalid ones included)."""
    domains: dict[str, DomainCoverage] = {}
    missing: Counter[str] = Counter()
    needs_seen: set[str] = set()

    def domain_of(name: str) -> DomainCoverage:
        return domains.setdefault(name, DomainCoverage(domain=name))

    for item in loaded.invalid:
        domain_of(_domain_of_path(item.path)).tasks += 1
    per_domain_needs: dict[str, Counter[str]] = defaultdict(Counter)
    for task in loaded.tasks:
        entry = domain_of(task.effective_domain)
        entry.tasks += 1
        entry.loadable += 1
        unsupported = unsupported_features(task)
        missing.update(unsupported)
        if unsupported:
            continue
        entry.runnable += 1
        requirements = task_requirements(task)
        if not requirements:
            entry.offline += 1
        per_domain_needs[entry.domain].update(requirements.keys())
        needs_seen.update(requirements)
    for name, counts in per_domain_needs.items():
        domains[name].needs = dict(sorted(counts.items()))
    rows = sorted(domains.values(), key=lambda d: d.domain)
    return CoverageReport(
        domains=rows,
        total=sum(d.tasks for d in rows),
        loadable=sum(d.loadable for d in rows),
        runnable=sum(d.runnable for d in rows),
        offline=sum(d.offline for d in rows),
        missing=dict(missing.most_common()),
        invalid={item.path: item.reason for item in loaded.invalid},
        requirements={name: EXPLANATIONS.get(name, "(no explanation registered)") for name in sorted(needs_seen)},
    )


def _domain_of_path(path: str) -> str:
    """Domain of an invalid task's path: `<domain>/<id>` index entries or `.../<domain>/<id>.json`."""
    parts = path.replace("\\", "/").split("/")
    return parts[-2] if len(parts) >= 2 else "unknown"
