"""Task fields that name a file on the runner's side, and how they are confined (issue 34, point 1).

A task config is untrusted (anyone's benchmark JSON). Two of its fields name a file on the runner host rather
than in the env: an `upload_file` setup step's `files[i].local_path` (a host file sent into the env) and a
`cache_file` getter's `path` (a host file handed to a metric). Both are relative names inside the runner's
URL cache (`RUNNER_CACHE_DIR`) or the rollout's work dir; neither may name any other runner file (its
environment under `/proc/self/environ`, its `.env`, its keys). `path_problem` says what is wrong with such a
name as written (absolute, climbing out with `..`, empty); `check_task_paths` applies it to a task's steps
and getters, so the producer refuses such a task with a 422 naming the field, and `inside` confines a name to
a root on the runner (symlinks resolved), which also catches what cannot be seen at submission.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

#: Setup step types whose `files[i].local_path` names a runner file.
UPLOAD_STEPS = frozenset({"upload_file"})
#: Getter types whose `path` names a runner file.
RUNNER_FILE_GETTERS = frozenset({"cache_file"})


def path_problem(name: object) -> str | None:
    """What makes `name` unusable as a file name relative to a runner directory, or None when it is fine:
    not a non-empty string, absolute (`/...`, `\\...`, `C:...`), or with a `..` component (it climbs out)."""
    if not isinstance(name, str) or not name.strip():
        return "must be a non-empty relative file name"
    if "\x00" in name:
        return "contains a NUL byte"
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path (a task names files relative to the runners' URL cache, never a runner path)"
    if ".." in pure.parts:
        return "climbs out of the runners' URL cache with '..'"
    return None


def inside(root: Path, name: str) -> Path | None:
    """`root / name` with symlinks resolved when it stays inside `root` (also resolved), else None.
    Refuses (None) what `path_problem` refuses, and a symlink that leads out of `root`."""
    if path_problem(name) is not None:
        return None
    base = root.resolve()
    target = (base / name).resolve()
    return target if target == base or base in target.parents else None


def _upload_problems(step: Any, where: str) -> Iterable[str]:
    files = step.get("files") if isinstance(step, dict) else None
    for index, item in enumerate(files if isinstance(files, list) else []):
        if isinstance(item, dict) and "local_path" in item:
            problem = path_problem(item["local_path"])
            if problem:
                yield f"{where}.files[{index}].local_path {str(item['local_path'])[:200]!r} {problem}"


def setup_step_problems(step_type: str, parameters: dict[str, Any]) -> list[str]:
    """Problems of one setup step's runner file names (`upload_file` `files[i].local_path`), each naming the
    field; empty for other steps."""
    if step_type not in UPLOAD_STEPS:
        return []
    return list(_upload_problems(parameters, f"{step_type}: parameters"))


def getter_problems(field: str, getters: Any) -> list[str]:
    """Problems of the runner file names of an evaluator's `field` (`result` / `expected`: one getter config
    or a list of them): a `cache_file` getter's `path`, each naming the field (`expected[1].path ...`)."""
    items = getters if isinstance(getters, list) else [getters]
    problems = []
    for index, getter in enumerate(items):
        if isinstance(getter, dict) and getter.get("type") in RUNNER_FILE_GETTERS:
            problem = path_problem(getter.get("path"))
            if problem:
                name = f"{field}[{index}]" if isinstance(getters, list) else field
                problems.append(f"{name}.path {str(getter.get('path'))[:200]!r} ({getter['type']}) {problem}")
    return problems
