"""The shapes of run ids, task ids, trajectory names and stored file names, and their checks.

Each of these becomes one segment of an object-store key (`{run_id}/{task_id}_{index}/{file}`) and a
part of Redis keys and RQ job ids, so each is a short run of ASCII letters, digits, `_` and `-` (file
names may also hold `.`), starting with a letter or digit: never `/`, `\\`, `..`, NUL, `%`, spaces or
non-ASCII look-alikes (`．．`, `∕`), so no id can address an object outside its run's prefix.
The producer validates them at the API (422 naming the field); `trajectory_prefix` and the object
store check them again before any key is used.
"""

from __future__ import annotations

import re

#: Run ids: letters, digits, `-`, single `_` (no `__`, which separates parts of RQ job ids), <= 64 chars.
RUN_ID_PATTERN = r"^[A-Za-z0-9](?:_?[A-Za-z0-9-])*_?$"
RUN_ID_MAX = 64
#: Task ids: letters, digits, `_`, `-` (all OSWorld ids are UUIDs), <= 128 chars.
TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
TASK_ID_MAX = 128
#: Trajectory directory names inside a run: `{task_id}_{rollout_index}`.
TRAJECTORY_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*_[0-9]+$"
TRAJECTORY_NAME_MAX = TASK_ID_MAX + 12
#: File names inside a trajectory (`step_0003.json`, `image_0003.png`, `reward.txt`).
FILE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
FILE_NAME_MAX = 128

_RUN_ID = re.compile(RUN_ID_PATTERN)
_TASK_ID = re.compile(TASK_ID_PATTERN)


def _check(value: object, what: str, pattern: re.Pattern[str], max_len: int) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    if not value or len(value) > max_len:
        raise ValueError(f"{what} must be 1 to {max_len} characters long, got {len(value)}")
    # fullmatch, not match: `$` alone would accept one trailing newline.
    if not value.isascii() or pattern.fullmatch(value) is None:
        raise ValueError(f"{what} {value[:80]!r} must match {pattern.pattern}")
    return value


def check_run_id(value: object) -> str:
    """`value` when it is a valid run id (see `RUN_ID_PATTERN`). Raises: ValueError naming the problem."""
    return _check(value, "run_id", _RUN_ID, RUN_ID_MAX)


def check_task_id(value: object) -> str:
    """`value` when it is a valid task id (see `TASK_ID_PATTERN`). Raises: ValueError naming the problem."""
    return _check(value, "task_id", _TASK_ID, TASK_ID_MAX)
