"""Paths and files in the env that getters of several modules read (shared by `gimp`, `vlc`, `vscode`).

OSWorld's getters find per-user files (`~/.config/vlc/vlcrc`, `~/.config/GIMP/2.10/gimprc`) by
running `python -c "import os; print(os.path.expanduser('~/...'))"` in the env and reading the
printed path (OSWorld `desktop_env/evaluators/getters/vlc.py`, `gimp.py`); `expand_user` does the
same through `/execute`, and `save_copy` writes a fetched file into the rollout's work dir.
"""

from __future__ import annotations

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import work_dir
from services.runner.osworld.hostpaths import local_name
from services.runner.osworld.protocol import EnvLike


def expand_user(env: EnvLike, path: str, where: str) -> str:
    """`path` (starting with `~`) expanded by the env's own Python, as the env's user sees it.

    Raises: EvalError naming `where` when the command cannot run in the env or prints nothing.
    """
    result = env.execute(["python", "-c", f"import os; print(os.path.expanduser({path!r}))"])
    expanded = (result.output or "").strip()
    if result.status not in (None, "success") or result.returncode not in (None, 0) or not expanded:
        raise EvalError(f"{where}: cannot expand {path!r} in the env (status {result.status!r}, "
                        f"exit {result.returncode!r}, stderr {result.error!r})")
    return expanded


def save_copy(ctx: EvalContext, dest: str, data: bytes, where: str) -> str:
    """Write `data` to `work_dir/<basename of dest>`; returns that host path."""
    local = work_dir(ctx, where) / local_name(dest, where, EvalError)
    local.write_bytes(data)
    return str(local)
