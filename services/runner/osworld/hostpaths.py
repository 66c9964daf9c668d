"""Runner host paths in setup and evaluation: what a task may name on the runner (issue 34, point 1).

Getter states are host paths of files the evaluation produced in the rollout's work dir (`vm_file`,
`cloud_file`, `cache_file` copies); everything else a task or the env hands a metric is data. A state that is
an absolute path of another runner file (a `rule` whose value is `/proc/self/environ`, a command output naming
the runner's `.env`) would let a metric open it: `host_file_outside` finds such a state and the evaluation
refuses it (EvalError), and `Evidence` copies only files inside the work dir into the stored trajectory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: Longest string looked at as a path (PATH_MAX on Linux), characters.
_PATH_MAX = 4096


def within(path: Path, roots: Iterable[Path]) -> bool:
    """True when `path`, symlinks resolved, is one of `roots` (resolved) or below one."""
    real = path.resolve()
    return any(real == root.resolve() or root.resolve() in real.parents for root in roots)


def _as_host_file(text: str) -> Path | None:
    """`text` as a path of an existing host file (any file type but a directory), or None."""
    if not text.startswith("/") or len(text) > _PATH_MAX or "\x00" in text or "\n" in text:
        return None
    path = Path(text)
    try:
        return path if os.path.lexists(path) and not path.is_dir() else None
    except OSError:  # a name too long for one component, a permission error: not a file we could read
        return None


def host_file_outside(state: Any, roots: Iterable[Path]) -> str | None:
    """The first string in `state` (a getter state: str, list, tuple or dict, nested) that names an existing
    runner host file outside `roots` (symlinks resolved), or None. Directories are not looked at (a rule value
    such as `/home/user/Desktop` names a place in the env)."""
    bounds = list(roots)
    if isinstance(state, str):
        path = _as_host_file(state)
        return state if path is not None and not within(path, bounds) else None
    if isinstance(state, list | tuple):
        items: Iterable[Any] = state
    elif isinstance(state, dict):
        items = [*state.keys(), *state.values()]
    else:
        return None
    for item in items:
        found = host_file_outside(item, bounds)
        if found is not None:
            return found
    return None


def local_name(dest: str, where: str, error: type[Exception]) -> str:
    """The file name part of `dest` (a getter's `dest`, an `execute` capture name) to create in the work dir.
    Raises: `error` naming `where` when it has no usable file name (empty, `.`, `..`)."""
    name = Path(dest).name
    if name in ("", ".", ".."):
        raise error(f"{where}: {dest[:200]!r} has no file name to write in the rollout's work dir")
    return name
