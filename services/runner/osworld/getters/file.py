"""OSWorld `desktop_env/evaluators/getters/file.py`: files from the env, the URL cache and the work dir.

File getters return host paths (str) of copies in `ctx.work_dir`, or lists of them with `multi` /
`gives`. Nothing is fetched from the network: `cloud_file` URLs resolve through the host URL cache
(`url_cache`). Raises: EvalError for bad config or a cache miss; env transport errors
(`common.env_client.EnvError`) propagate unchanged.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from common import url_cache
from common.task_paths import inside, path_problem
from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter, work_dir
from services.runner.osworld.hostpaths import local_name
from services.runner.osworld.params import as_bool, require, require_str
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import Needs


def _file_specs(config: dict[str, Any], where: str) -> tuple[list[str], list[str], set[int]]:
    """(`path`s, `dest`s, `gives`) of a file getter; lists when `multi`, else one of each."""
    if as_bool(config.get("multi", False), "multi", where, EvalError):
        paths, dests = require(config, "path", where, EvalError), require(config, "dest", where, EvalError)
        if not (isinstance(paths, list) and isinstance(dests, list) and len(paths) == len(dests) and paths):
            raise EvalError(f"{where}: with 'multi', 'path' and 'dest' must be non-empty lists of equal length")
    else:
        paths = [require_str(config, "path", where, EvalError)]
        dests = [require_str(config, "dest", where, EvalError)]
    if not all(isinstance(x, str) and x for x in [*paths, *dests]):
        raise EvalError(f"{where}: 'path' and 'dest' entries must be non-empty strings")
    gives = config.get("gives", [0])
    if not isinstance(gives, list) or not all(isinstance(i, int) and 0 <= i < len(paths) for i in gives):
        raise EvalError(f"{where}: 'gives' must be a list of indexes into 'path', got {gives!r}")
    return paths, dests, set(gives)


def _given(items: list[str | None]) -> str | None | list[str | None]:
    """OSWorld's return convention: one given file -> its path, else the list."""
    return items[0] if len(items) == 1 else items


def get_vm_file(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None | list[str | None]:
    """`vm_file`: copy env file(s) `path` to `work_dir/<dest>`; returns the given local path(s),
    None for a file missing in the env. Config: `path`, `dest`, optional `multi`, `gives` ([0])."""
    paths, dests, gives = _file_specs(config, "vm_file")
    work = work_dir(ctx, "vm_file")
    given: list[str | None] = []
    for index, (path, dest) in enumerate(zip(paths, dests, strict=True)):
        data = env.get_file(path)
        local = work / local_name(dest, "vm_file", EvalError)
        if data is not None:
            local.write_bytes(data)
        if index in gives:
            given.append(None if data is None else str(local))
    return _given(given)


def get_cloud_file(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None | list[str | None]:
    """`cloud_file`: URL(s) `path` resolved in the URL cache and copied to `work_dir/<dest>`.

    Raises: EvalError naming the URL and cache location on a cache miss (never a network fetch).
    """
    urls, dests, gives = _file_specs(config, "cloud_file")
    work = work_dir(ctx, "cloud_file")
    given: list[str | None] = []
    for index, (url, dest) in enumerate(zip(urls, dests, strict=True)):
        try:
            cached = url_cache.lookup(ctx.cache_dir, url, local_name(dest, "cloud_file", EvalError))
        except url_cache.CacheMiss as exc:
            raise EvalError(f"cloud_file: {exc}") from exc
        local = work / local_name(dest, "cloud_file", EvalError)
        shutil.copyfile(cached, local)
        if index in gives:
            given.append(str(local))
    return _given(given)


def get_cache_file(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str:
    """`cache_file`: `path`, a name relative to the per-rollout work dir (files captured or fetched during this
    rollout) or, failing that, to `cache_dir`, resolved inside that directory (symlinks too); a file of
    `cache_dir` is copied into the work dir (`cache_file/<name>`), so the state names a file the evaluation
    produced (`Evidence` keeps only those). Returns that host path.

    Raises: EvalError when `path` is absolute or climbs out (`common.task_paths`; OSWorld joins it to its
    cache dir unchecked), or when the file is in neither directory.
    """
    relative = require_str(config, "path", "cache_file", EvalError)
    problem = path_problem(relative)
    if problem:
        raise EvalError(f"cache_file: path {relative[:200]!r} {problem}")
    work = work_dir(ctx, "cache_file")
    captured = inside(work, relative)
    if captured is not None and captured.is_file():
        return str(captured)
    shared = inside(ctx.cache_dir, relative)
    if shared is not None and shared.is_file():
        local = work / "cache_file" / relative
        local.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared, local)
        return str(local)
    raise EvalError(f"cache_file: {relative!r} not found under {[str(work), str(ctx.cache_dir)]} "
                    "(a symlink leading out of them is not followed)")


def last_row_of_xlsx(path: str) -> list[str]:
    """Cells of the last data row of the first sheet (pandas, first row as header), as strings
    (`str` of each value: `"nan"` for an empty cell, `"3.0"` for a float).

    Raises: EvalError when the file cannot be read as a workbook or has no data row.
    """
    try:
        return [str(value) for value in pd.read_excel(path).iloc[-1].astype(str).tolist()]
    except Exception as exc:  # OSWorld raises too (pandas cannot read it, or there is no row)
        raise EvalError(f"content_from_vm_file: cannot read the last row of {path!r}: {type(exc).__name__}: {exc}") \
            from exc


def get_content_from_vm_file(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> list[str] | None:
    """`content_from_vm_file`: content of the env file `path` copied to the work dir; with
    `file_type` "xlsx" and `file_content` "last_row", the last row (`last_row_of_xlsx`); None for
    another `file_content` (as OSWorld).

    Raises: EvalError for another `file_type`, a missing file, or an unreadable workbook.
    """
    path = require_str(config, "path", "content_from_vm_file", EvalError)
    local = get_vm_file(env, {"path": path, "dest": Path(path).name}, ctx)
    file_type, file_content = config.get("file_type"), config.get("file_content")
    if "file_type" not in config or "file_content" not in config:
        raise EvalError("content_from_vm_file: config needs 'file_type' and 'file_content'")
    if file_type != "xlsx":
        raise EvalError(f"content_from_vm_file: file_type {file_type!r} not supported (only 'xlsx')")
    if file_content != "last_row":
        return None
    if not isinstance(local, str):
        raise EvalError(f"content_from_vm_file: {path!r} does not exist in the env")
    return last_row_of_xlsx(local)


GETTERS: dict[str, Getter] = {
    "vm_file": get_vm_file,
    "content_from_vm_file": get_content_from_vm_file,
    "cloud_file": get_cloud_file,
    "cache_file": get_cache_file,
}
NEEDS: dict[str, Needs] = {}
