"""`cua-rollout audit`: every task of an OSWorld index run once through the real stack with built-in agents
that do nothing (`noop`: `finished()` at step 0; `garbage`: a reply no agent can parse, so UI-TARS ends the
episode as OSWorld's agent does, `DONE`; `stall`: `wait()` until `max_steps`) or give up (`fail`:
`call_user()`, OSWorld's FAIL, at step 0), to show that each task is set up and scored, and that doing
nothing earns no reward, infeasible tasks included (an unreadable reply or running out of steps is never
the model's FAIL: docs/scoring.md).

The tasks audited are those `cua-rollout coverage` counts runnable offline (M); the others are listed with
their reasons. The URL cache gets a stand-in file (`standins`) for every URL it lacks. A rollout is *set
up* when its setup finished (it reached the step loop: any status but `setup_error`, an infrastructure
failure, `unsupported`...), *scored* when it carries a reward, *stored* when the sink wrote its
trajectory's `manifest.json` (its end event, which a key the store refuses would dead-letter). The agent is
the scripted policy (the vLLM stand-in) answering every request with the agent's replies; the run goes
through producer, runner, gateway and envs as any run does. Several agents audit in one stack (the same
desktops), one run each: a run's `model` is `audit-<agent>` and the agent's script names that model
(`scripted_policy/scripts.py`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from common.status import RolloutStatus
from common.task import OSWorldTask, load_task_set
from common.task_urls import unique_urls

#: Steps of an audit rollout: noop, fail and garbage end at step 0; stall waits through all of them.
AUDIT_MAX_STEPS = 3
#: A reply that no agent parses: no `Action:` (UI-TARS), no fenced code block nor WAIT/DONE/FAIL
#: (`osworld_prompt` pyautogui), not JSON (`computer_13`), no `<tool_call>` (Qwen); tests/cli/test_audit.py
#: checks each built-in agent rejects it.
GARBAGE_REPLY = "audit: garbage \u2042 qz7 ]]> lorem vlm ipsum \u00e9\u00e8 0x3f no move here"
#: The built-in agents: name -> the UI-TARS replies the scripted policy gives, one per step.
AGENT_REPLIES: dict[str, list[str]] = {
    "noop": ["Thought: audit: I do nothing.\nAction: finished(content='')"],
    "fail": ["Thought: audit: I give up.\nAction: call_user()"],
    "garbage": [GARBAGE_REPLY],
    "stall": ["Thought: audit: I wait.\nAction: wait()"] * AUDIT_MAX_STEPS,
}
#: The agents that do nothing: every reward > 0 they earn must be explained (`KNOWN_NOOP_NONZERO`).
DO_NOTHING = frozenset({"noop", "garbage", "stall"})
#: Statuses of a rollout whose setup did not finish.
NOT_SET_UP = frozenset({RolloutStatus.SETUP_ERROR, RolloutStatus.ENV_INIT_FAILED, RolloutStatus.ENV_ERROR,
                        RolloutStatus.MODEL_ERROR, RolloutStatus.UNSUPPORTED, RolloutStatus.QUARANTINED,
                        RolloutStatus.CANCELLED, RolloutStatus.QUEUED, RolloutStatus.RUNNING})

#: Tasks where a do-nothing agent scores > 0 through a checker of OSWorld's own (same result with
#: OSWorld's evaluator on the same files): task id -> the explanation and the upstream issue or PR.
KNOWN_NOOP_NONZERO: dict[str, str] = {}
#: The per-domain counts of a report, in the order of its tables.
DOMAIN_COUNTS = ("tasks", "set_up", "scored", "stored", "nonzero", "skipped")


@dataclass
class TaskOutcome:
    """One audited task: its rollout's `status`, `reward` and `error`, and the three verdicts."""

    task_id: str
    domain: str
    status: str
    reward: float | None
    error: str | None
    set_up: bool
    scored: bool
    stored: bool

    @property
    def nonzero(self) -> bool:
        """True when the agent earned a reward > 0."""
        return self.reward is not None and self.reward > 0


@dataclass
class AuditReport:
    """The audit of an index: `outcomes` of the audited tasks, `skipped` (task id -> why not runnable
    offline, with its domain), the `agent` used, and the wall time in seconds."""

    agent: str
    outcomes: list[TaskOutcome]
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)
    seconds: float = 0.0

    def explanation(self, outcome: TaskOutcome) -> str | None:
        """Why a do-nothing agent's reward > 0 on `outcome` is not a start-state or scoring bug of ours (None:
        unexplained)."""
        if self.agent not in DO_NOTHING or not outcome.nonzero:
            return None
        if outcome.task_id in KNOWN_NOOP_NONZERO:
            return f"OSWorld checker bug: {KNOWN_NOOP_NONZERO[outcome.task_id]}"
        return None

    @property
    def total(self) -> int:
        """M: the tasks audited (runnable offline)."""
        return len(self.outcomes)

    def count(self, what: str) -> int:
        """Audited tasks that are `set_up`, `scored` or `nonzero`."""
        return sum(1 for o in self.outcomes if getattr(o, what))

    def summary_line(self) -> str:
        """`audit: set up N/M, scored N/M, stored N/M, noop nonzero K` (`<agent> nonzero K` with another agent)."""
        m = self.total
        return (f"audit: set up {self.count('set_up')}/{m}, scored {self.count('scored')}/{m}, "
                f"stored {self.count('stored')}/{m}, {self.agent} nonzero {self.count('nonzero')}")

    def per_domain(self) -> dict[str, dict[str, int]]:
        """Domain -> counts of `DOMAIN_COUNTS`: `tasks`, `set_up`, `scored`, `stored`, `nonzero`, `skipped` (not
        runnable offline)."""
        rows: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(DOMAIN_COUNTS, 0))
        for o in self.outcomes:
            row = rows[o.domain]
            row["tasks"] += 1
            for verdict in ("set_up", "scored", "stored", "nonzero"):
                row[verdict] += getattr(o, verdict)
        for item in self.skipped.values():
            rows[item["domain"]]["skipped"] += 1
        return dict(sorted(rows.items()))

    def problems(self) -> list[TaskOutcome]:
        """Audited tasks not set up, not scored, not stored, or with a reward > 0 (the task list of the report)."""
        return [o for o in self.outcomes if not o.set_up or not o.scored or not o.stored or o.nonzero]

    def passed(self) -> bool:
        """True when every audited task was set up, scored and stored, and (do-nothing agents) every reward > 0 is
        explained (`explanation`). The fail agent's rewards are expected: OSWorld's infeasible tasks pay for FAIL."""
        unexplained = [o for o in self.outcomes if o.nonzero and self.explanation(o) is None]
        return self.count("set_up") == self.count("scored") == self.count("stored") == self.total and \
            (self.agent not in DO_NOTHING or not unexplained)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-able data: summary, per domain, outcomes, skipped tasks."""
        return {"agent": self.agent, "summary": self.summary_line(), "seconds": round(self.seconds, 1),
                "total": self.total, "set_up": self.count("set_up"), "scored": self.count("scored"),
                "stored": self.count("stored"), "nonzero": self.count("nonzero"), "domains": self.per_domain(),
                "outcomes": [asdict(o) for o in self.outcomes], "skipped": self.skipped,
                "explained": {o.task_id: self.explanation(o) for o in self.outcomes if self.explanation(o)}}


@dataclass(frozen=True)
class Selection:
    """The tasks of an index split into `audited` (runnable offline) and `skipped` (task id -> domain and
    reason), plus `invalid` task files (path -> reason)."""

    audited: list[OSWorldTask]
    skipped: dict[str, dict[str, str]]
    invalid: dict[str, str]


def select_tasks(index: Path, per_domain: int | None = None, only: list[str] | None = None) -> Selection:
    """The tasks of `index` that `cua-rollout coverage` counts runnable offline (the first `per_domain` of
    each domain in index order when given; only the ids or id prefixes in `only` when given); the others
    with the requirement or missing piece that keeps them from running offline.

    Raises: ValueError when `index` cannot be loaded."""
    from services.runner.osworld.requirements import EXPLANATIONS
    from services.runner.osworld.support import task_requirements, unsupported_features

    loaded = load_task_set(index)
    audited: list[OSWorldTask] = []
    skipped: dict[str, dict[str, str]] = {}
    taken: dict[str, int] = defaultdict(int)
    for task in loaded.tasks:
        if only and not any(task.id.startswith(prefix) for prefix in only):
            continue
        domain = task.effective_domain
        unsupported = unsupported_features(task)
        requirements = {} if unsupported else task_requirements(task)
        if unsupported or requirements:
            reason = f"unsupported: {', '.join(unsupported)}" if unsupported else "; ".join(
                f"needs {name} ({', '.join(labels)}): {EXPLANATIONS.get(name, '')}"
                for name, labels in requirements.items())
            skipped[task.id] = {"domain": domain, "reason": reason}
            continue
        if per_domain is not None and taken[domain] >= per_domain:
            continue
        taken[domain] += 1
        audited.append(task)
    return Selection(audited, skipped, {item.path: item.reason for item in loaded.invalid})


def check_agents(agents: list[str]) -> list[str]:
    """`agents` without repeats, in order. Raises: ValueError naming an unknown agent or an empty list."""
    unknown = [a for a in agents if a not in AGENT_REPLIES]
    if unknown or not agents:
        raise ValueError(f"--agent {(unknown or [''])[0]!r}: known agents are {', '.join(AGENT_REPLIES)}")
    return list(dict.fromkeys(agents))


def audit_model(agent: str) -> str:
    """The `model` of `agent`'s audit run, which its script names (`audit-<agent>`)."""
    return f"audit-{agent}"


def write_agent_script(directory: Path, agent: str) -> Path:
    """The scripted policy's script for `agent` in `directory`: an empty instruction (it matches every
    request), the model of the agent's run (`audit_model`) and the agent's replies. Raises: ValueError for
    an unknown agent."""
    check_agents([agent])
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"audit-{agent}.json"
    path.write_text(json.dumps({"instruction": "", "model": audit_model(agent), "replies": AGENT_REPLIES[agent]}))
    return path


def prepare_cache(cache_dir: Path, tasks: list[OSWorldTask]) -> int:
    """Stand-ins in `cache_dir` for every URL of `tasks` it lacks; returns how many were made.

    Raises: RuntimeError when a stand-in cannot be made (see `standins.load`)."""
    from services.cli import standins

    dumped = [task.model_dump() for task in tasks]
    files = unique_urls(dumped)
    return len(standins.load(cache_dir, files.values(), members=standins.archive_members(dumped)).generated)


def stored_task_ids(trajectories: list[dict[str, Any]]) -> set[str]:
    """Task ids whose trajectory has a stored manifest, from `GET /v1/runs/{id}/trajectories`
    (`[{"trajectory": "<run>/<task>_<index>", "manifest": {...} | null}]`)."""
    return {entry["trajectory"].split("/", 1)[1].rsplit("_", 1)[0] for entry in trajectories if entry.get("manifest")}


def outcomes_of(run: dict[str, Any], tasks: list[OSWorldTask], stored: set[str]) -> list[TaskOutcome]:
    """One `TaskOutcome` per task, from the finished run (`GET /v1/runs/{id}`) and the ids of the tasks whose
    trajectory is stored (`stored_task_ids`), in the tasks' order."""
    by_task = {r["task_id"]: r for r in run.get("rollouts", [])}
    outcomes = []
    for task in tasks:
        rollout = by_task.get(task.id, {"status": "queued", "reward": None, "error": "no rollout in the run"})
        status = RolloutStatus(rollout["status"])
        reward = rollout.get("reward")
        outcomes.append(TaskOutcome(
            task_id=task.id, domain=task.effective_domain, status=status.value,
            reward=None if reward is None else float(reward), error=rollout.get("error"),
            set_up=status not in NOT_SET_UP, scored=reward is not None, stored=task.id in stored))
    return outcomes
