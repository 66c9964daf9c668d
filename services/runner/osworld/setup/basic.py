"""OSWorld `SetupController` basic steps: execute, launch, open, windows, sleep, download, upload.

Semantics of OSWorld `desktop_env/controllers/setup.py` (`SetupController.setup` and its
`_<type>_setup` methods), with three deliberate differences:

- `download` never touches the network: URLs resolve through the host URL cache (`url_cache`);
- an `execute` `until` loop is bounded (`SetupContext.until_max_attempts`) and raises SetupError
  when the condition is never met (OSWorld would loop forever);
- a failed step raises instead of being logged and skipped (OSWorld ignores some failures, e.g. a
  missing `upload_file` local path). A non-zero exit code of an `execute` command is still *not* a
  failure, exactly as in OSWorld.

Env transport errors (`common.env_client.EnvError`) propagate unchanged, with a note naming the step.
"""

from __future__ import annotations

import shlex
from typing import Any

from common import url_cache
from common.task_paths import inside, path_problem
from services.runner.osworld.context import SetupContext
from services.runner.osworld.errors import SetupError
from services.runner.osworld.hostpaths import local_name
from services.runner.osworld.offline import command_needs
from services.runner.osworld.params import as_bool, require, require_command, require_records, require_str
from services.runner.osworld.placeholders import substitute
from services.runner.osworld.protocol import EnvLike, ExecResultLike
from services.runner.osworld.requirements import Needs
from services.runner.osworld.setup.base import StepHandler

_UNTIL_KEYS = frozenset({"returncode", "stdout", "stderr"})




def _execute(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`execute` / `command`: `command` (str | list), `shell`, optional `until`, `stdout`, `stderr`.

    `until` (`{"returncode": int}`, `{"stdout": substr}`, `{"stderr": substr}`; any one met ends
    the loop) re-runs the command every `ctx.until_interval_s` seconds, at most
    `ctx.until_max_attempts` times. `stdout` / `stderr` name files in `ctx.work_dir` that receive
    the command's output / error text.
    """
    command = substitute(require_command(params, "command", "execute", SetupError), ctx.placeholders)
    shell = as_bool(params.get("shell", False), "shell", "execute", SetupError)
    until = params.get("until") or {}
    if not isinstance(until, dict) or not set(until) <= _UNTIL_KEYS:
        raise SetupError(f"execute: 'until' must be an object with keys among {sorted(_UNTIL_KEYS)}, got {until!r}")
    attempts = max(1, ctx.until_max_attempts)
    for attempt in range(1, attempts + 1):
        result = env.setup_execute(command, shell=shell)
        _capture(result, params, ctx)
        if not until or _until_met(until, result):
            _note_failure(result, command, ctx)
            return
        if attempt < attempts:
            ctx.sleep(ctx.until_interval_s)
    raise SetupError(f"execute: 'until' condition {until!r} not met after {attempts} attempts of {command!r}")


def _note_failure(result: ExecResultLike, command: Any, ctx: SetupContext) -> None:
    """Note a non-zero exit in `ctx.log` (OSWorld goes on after one, and so does this setup)."""
    if result.returncode in (0, None):
        return
    ctx.log.append({"phase": ctx.phase, "command": command if isinstance(command, str) else list(command),
                    "returncode": result.returncode, "error": (result.error or result.output or "")[-500:]})


def _until_met(until: dict[str, Any], result: ExecResultLike) -> bool:
    if "returncode" in until and result.returncode == until["returncode"]:
        return True
    if "stdout" in until and str(until["stdout"]) in (result.output or ""):
        return True
    return "stderr" in until and str(until["stderr"]) in (result.error or "")


def _capture(result: ExecResultLike, params: dict[str, Any], ctx: SetupContext) -> None:
    for key, text in (("stdout", result.output), ("stderr", result.error)):
        name = params.get(key)
        if not name:
            continue
        if ctx.work_dir is None:
            raise SetupError(f"execute: capturing {key!r} to {name!r} needs a work dir (SetupContext.work_dir)")
        ctx.work_dir.mkdir(parents=True, exist_ok=True)
        (ctx.work_dir / local_name(str(name), f"execute {key}", SetupError)).write_text(text or "")


def _launch(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`launch`: `command` (str | list), `shell`. A string without shell is split like a shell would
    (OSWorld splits it on whitespace)."""
    command = substitute(require_command(params, "command", "launch", SetupError), ctx.placeholders)
    shell = as_bool(params.get("shell", False), "shell", "launch", SetupError)
    if isinstance(command, str) and not shell:
        command = shlex.split(command)
    env.launch(command, shell=shell)


def _open(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`open`: `path` in the env, opened with its default application."""
    env.open_file(require_str(params, "path", "open", SetupError))


def _window_args(params: dict[str, Any], where: str) -> tuple[str, bool, bool]:
    name = require_str(params, "window_name", where, SetupError)
    strict = as_bool(params.get("strict", False), "strict", where, SetupError)
    by_class = as_bool(params.get("by_class", False), "by_class", where, SetupError)
    return name, strict, by_class


def _activate_window(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`activate_window`: `window_name`, optional `strict` (exact title), `by_class` (WM class)."""
    name, strict, by_class = _window_args(params, "activate_window")
    env.activate_window(name, strict=strict, by_class=by_class)


def _close_window(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`close_window`: `window_name`, optional `strict`, `by_class`."""
    name, strict, by_class = _window_args(params, "close_window")
    env.close_window(name, strict=strict, by_class=by_class)


def _sleep(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`sleep`: `seconds` (number >= 0), slept through `ctx.sleep`."""
    seconds = require(params, "seconds", "sleep", SetupError)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        raise SetupError(f"sleep: parameter 'seconds' must be a number >= 0, got {seconds!r}")
    ctx.sleep(float(seconds))


def _download(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`download`: `files: [{"url", "path"}]`; each URL's cached file is uploaded to `path` in the env.

    Raises: SetupError naming the URL and the cache location when a URL is not cached.
    """
    for item in require_records(params, "files", ("url", "path"), "download", SetupError):
        try:
            cached = url_cache.lookup(ctx.cache_dir, item["url"], url_cache.basename_of(item["path"]))
        except url_cache.CacheMiss as exc:
            raise SetupError(f"download: {exc}") from exc
        env.upload_file(item["path"], cached.read_bytes())


def _upload_file(params: dict[str, Any], env: EnvLike, ctx: SetupContext) -> None:
    """`upload_file`: `files: [{"local_path", "path"}]`; runner file -> env `path`.

    `local_path` is a name relative to `ctx.cache_dir` (the URL cache), else to `ctx.work_dir` (files this
    rollout captured), resolved inside it (symlinks too, `common.task_paths.inside`). OSWorld also takes any
    host path; here no task names a runner file (issue 34): an absolute or climbing `local_path` is refused.
    Raises: SetupError naming the field when `local_path` is absolute, climbs out or is not found.
    """
    for index, item in enumerate(require_records(params, "files", ("local_path", "path"), "upload_file", SetupError)):
        name = item["local_path"]
        problem = path_problem(name)
        if problem:
            raise SetupError(f"upload_file: files[{index}].local_path {str(name)[:200]!r} {problem}")
        roots = [root for root in (ctx.cache_dir, ctx.work_dir) if root is not None]
        choices = [found for found in (inside(root, name) for root in roots) if found is not None]
        found = next((c for c in choices if c.is_file()), None)
        if found is None:
            raise SetupError(f"upload_file: files[{index}].local_path {name!r} not found inside "
                             f"{[str(r) for r in roots]} (a symlink leading out of them is not followed)")
        env.upload_file(item["path"], found.read_bytes())


SETUP_HANDLERS: dict[str, StepHandler] = {
    "execute": _execute,
    "command": _execute,
    "launch": _launch,
    "open": _open,
    "activate_window": _activate_window,
    "close_window": _close_window,
    "sleep": _sleep,
    "download": _download,
    "upload_file": _upload_file,
}
#: A command that installs packages or fetches the web needs the network (`offline.command_needs`).
NEEDS: dict[str, Needs] = {"execute": command_needs, "command": command_needs}
