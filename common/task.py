"""OSWorld task JSON, kept unchanged (unknown fields are preserved on the way through).

Format: xlang-ai/OSWorld `evaluation_examples/examples/<domain>/<id>.json`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from common.ids import TASK_ID_MAX, TASK_ID_PATTERN
from common.task_paths import getter_problems, setup_step_problems


class SetupStep(BaseModel):
    """One step of a task's `config` (or an evaluator's `postconfig`): `{"type", "parameters"}`."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _no_runner_path(self) -> SetupStep:
        """An `upload_file` `local_path` names a file of the runners' URL cache, never a runner host path
        (`common.task_paths`). Raises: ValueError naming the field."""
        problems = setup_step_problems(self.type, self.parameters)
        if problems:
            raise ValueError("; ".join(problems))
        return self


class EvaluatorConfig(BaseModel):
    """OSWorld `evaluator`: `func` is a metric name or a list of them (combined with `conj`).

    `result` / `expected` are getter configs (`{"type": ..., ...}`) or lists aligned with `func`.
    """

    model_config = ConfigDict(extra="allow")

    func: str | list[str]
    result: dict[str, Any] | list[dict[str, Any]] | None = None
    expected: dict[str, Any] | list[dict[str, Any]] | None = None
    options: dict[str, Any] | list[dict[str, Any]] | None = None
    conj: str = "and"
    postconfig: list[SetupStep] = Field(default_factory=list)

    @field_validator("conj")
    @classmethod
    def _conj_is_and_or(cls, value: str) -> str:
        if value not in ("and", "or"):
            raise ValueError(f"conj must be 'and' or 'or', got {value!r}")
        return value

    @model_validator(mode="after")
    def _no_runner_path(self) -> EvaluatorConfig:
        """A `cache_file` getter's `path` names a file of the URL cache or the rollout's work dir, never a runner
        host path (`common.task_paths`). Raises: ValueError naming the field."""
        problems = getter_problems("result", self.result) + getter_problems("expected", self.expected)
        if problems:
            raise ValueError("; ".join(problems))
        return self


class OSWorldTask(BaseModel):
    """An OSWorld task. Required: `id`, `instruction`, `evaluator`; `config` defaults to `[]`.

    `domain` is our optional addition (OSWorld keeps it in the directory name); when absent,
    `snapshot` or the first of `related_apps` stands in (see `effective_domain`).
    """

    model_config = ConfigDict(extra="allow")

    # Letters, digits, `_`, `-` (all OSWorld ids are UUIDs): the id is part of RQ job ids and object keys.
    id: str = Field(min_length=1, max_length=TASK_ID_MAX, pattern=TASK_ID_PATTERN)
    instruction: str = Field(min_length=1)
    config: list[SetupStep] = Field(default_factory=list)
    evaluator: EvaluatorConfig
    snapshot: str | None = None
    related_apps: list[str] | None = None
    # OSWorld writes one URL, or a list of them (vs_code/ea98c5d7-...): both kept as written.
    source: str | list[str] | None = None
    domain: str | None = None

    @property
    def effective_domain(self) -> str:
        """The task's domain: `domain`, else `snapshot`, else the first related app, else 'default'."""
        if self.domain:
            return self.domain
        if self.snapshot:
            return self.snapshot
        if self.related_apps:
            return self.related_apps[0]
        return "default"

    def to_json_dict(self) -> dict[str, Any]:
        """The task as JSON-ready dict, unknown fields included, unset optionals left out."""
        return self.model_dump(mode="json", exclude_unset=True)


def load_task_file(path: Path, domain: str | None = None) -> OSWorldTask:
    """Read one OSWorld task JSON file; `domain` fills in when the file has none.

    Raises: ValueError naming the file when it is not valid JSON or not a valid task.
    """
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read task JSON: {exc}") from exc
    if domain and isinstance(raw, dict) and not raw.get("domain"):
        raw["domain"] = domain
    try:
        return OSWorldTask.model_validate(raw)
    except Exception as exc:
        raise ValueError(f"{path}: invalid OSWorld task: {exc}") from exc


@dataclass(frozen=True)
class InvalidTask:
    """A task of an index or directory that cannot be loaded: `path` (file or index entry) and `reason`."""

    path: str
    reason: str


@dataclass
class LoadedTasks:
    """What `load_task_set` found: the valid `tasks`, in index order, and the `invalid` ones."""

    tasks: list[OSWorldTask] = field(default_factory=list)
    invalid: list[InvalidTask] = field(default_factory=list)


class InvalidTasks(ValueError):
    """Some tasks of a set cannot be loaded; `invalid` lists each with its path and reason."""

    def __init__(self, source: Path, invalid: list[InvalidTask]) -> None:
        lines = "\n".join(f"  {item.path}: {item.reason}" for item in invalid)
        super().__init__(f"{source}: {len(invalid)} invalid task(s):\n{lines}")
        self.invalid = invalid


def load_tasks(path: Path, skip_invalid: bool = False) -> list[OSWorldTask]:
    """Load tasks from a task file, a directory of them, or an OSWorld `test_all.json` index.

    Raises: ValueError naming the file when it cannot be read; InvalidTasks (a ValueError) listing
    every invalid task with its path and reason, unless `skip_invalid` (see `load_task_set` to get
    the skipped ones too).
    """
    loaded = load_task_set(path)
    if loaded.invalid and not skip_invalid:
        raise InvalidTasks(path, loaded.invalid)
    if not loaded.tasks:
        raise ValueError(f"{path}: no valid task found")
    return loaded.tasks


def load_task_set(path: Path) -> LoadedTasks:
    """Every task of a task file, a directory of them, or an OSWorld index, valid or not.

    An index is `{domain: [task_id, ...]}`; its tasks are read from `<dir>/examples/<domain>/<id>.json`
    or `<dir>/<domain>/<id>.json` next to the index. A directory is searched recursively for `*.json`
    (files named `test_*.json` and `scripts` directories are skipped); the parent directory name is
    used as the domain when the task has none. One bad task never hides the others: each is reported
    in `invalid` with its path and reason.
    Raises: ValueError when `path` itself cannot be read, is not JSON, or a directory holds no task.
    """
    if path.is_dir():
        files = [f for f in sorted(path.rglob("*.json"))
                 if not f.name.startswith("test_") and "scripts" not in f.relative_to(path).parts]
        if not files:
            raise ValueError(f"{path}: no task JSON files found")
        return _load_files([(f, f.parent.name if f.parent != path else None) for f in files])
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read task JSON: {exc}") from exc
    if isinstance(raw, dict) and "instruction" not in raw and raw and all(isinstance(v, list) for v in raw.values()):
        return _load_index(path, raw)
    return _load_files([(path, None)])


def _load_files(files: list[tuple[Path, str | None]]) -> LoadedTasks:
    loaded = LoadedTasks()
    for file, domain in files:
        try:
            loaded.tasks.append(load_task_file(file, domain=domain))
        except ValueError as exc:
            loaded.invalid.append(InvalidTask(str(file), str(exc).removeprefix(f"{file}: ")))
    return loaded


def _load_index(index_path: Path, index: dict[str, list[Any]]) -> LoadedTasks:
    base = index_path.parent
    loaded = LoadedTasks()
    for domain, ids in index.items():
        for task_id in ids:
            if not isinstance(task_id, str):
                reason = f"task id must be a string, got {task_id!r}"
                loaded.invalid.append(InvalidTask(f"{index_path}:{domain}", reason))
                continue
            candidates = [base / "examples" / domain / f"{task_id}.json", base / domain / f"{task_id}.json"]
            found = next((c for c in candidates if c.exists()), None)
            if found is None:
                loaded.invalid.append(InvalidTask(f"{domain}/{task_id}", f"not found under {base}"))
                continue
            part = _load_files([(found, domain)])
            loaded.tasks += part.tasks
            loaded.invalid += part.invalid
    return loaded
