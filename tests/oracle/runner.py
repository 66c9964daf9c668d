"""Oracle process: runs OSWorld's own evaluator functions (PyPI `desktop-env`) for the differential
tests. Started with `.venv-oracle/bin/python tests/oracle/runner.py`; never imported by the product.

Protocol: one JSON request per stdin line, one JSON reply per stdout line.
Request: `{"module": "metrics.table", "func": "compare_table", "args": [...], "kwargs": {...},
"stubs": ["easyocr"], "env": null}`. `module` is relative to `desktop_env.evaluators`; `stubs`
names modules to register as empty stand-ins before the import (heavy imports the compared function
does not use, e.g. easyocr in docs.py); `env` (optional) is a dict of attributes for a stand-in
`env` object passed as the first argument (for getters that read only attributes such as
`vm_platform`); its optional key `controller` describes a stand-in `env.controller` (see
`_Controller`). `now` (optional, ISO 8601 with offset) freezes the
compared module's `datetime.now()` at that instant for the call. Reply: `{"ok": true, "value":
<JSON value>}` or `{"ok": false, "error": "<repr>", "type": "<exception class>"}`.

The package `__init__` files of `desktop_env` import every evaluator module (some need torch);
registering the parent packages as plain module objects whose `__path__` points at the installed
folders skips them (see shared/notes/osworld-oracle.md).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import importlib
import importlib.util
import io
import json
import math
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

EVALUATOR_PACKAGES = ("", ".evaluators", ".evaluators.metrics", ".evaluators.getters")


def register_parents(packages: tuple[str, ...] = EVALUATOR_PACKAGES) -> None:
    """Register `desktop_env<suffix>` for each of `packages` as a plain module whose `__path__` is the
    installed folder, so importing one submodule skips the package `__init__` files.

    Raises: SystemExit when desktop-env is not installed in this environment.
    """
    spec = importlib.util.find_spec("desktop_env")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("desktop-env is not installed in this environment (bash scripts/setup.sh --oracle)")
    root = list(spec.submodule_search_locations)[0]
    for suffix in packages:
        name = "desktop_env" + suffix
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [root + suffix.replace(".", "/")]
            sys.modules[name] = module


class _Stub(types.ModuleType):
    """Stand-in for a heavy module: importable, any attribute is another stub (so `from x import y`
    and `x.y.z` work); calling one raises, so a compared function that really uses it fails loudly."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(f"{self.__name__}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"oracle stub {self.__name__} was called")


def _stub(names: list[str]) -> None:
    for name in names:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            sys.modules.setdefault(".".join(parts[:i]), _Stub(".".join(parts[:i])))


def _jsonable(value: Any) -> Any:
    """A JSON value for `value` (numpy scalars, tuples, sets, NaN as the string "nan")."""
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, list | dict):
        try:
            value = value.item()
        except (TypeError, ValueError):
            pass
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


class _Controller:
    """Stand-in for OSWorld's `PythonController` (`env.controller`), answering from the request's spec:

    - `files` (VM path -> host path) and `file_data` (VM path -> base64 content): `get_file(path)`
      gives the bytes, or None for an unknown path (as a 404);
    - `accessibility_tree` (XML text or None), `directory_trees` (VM path -> `{"name", "type",
      "children"}`), `home` (the VM's `$HOME`, default /home/user): `get_accessibility_tree`,
      `get_vm_directory_tree`, `get_vm_desktop_path`, and `execute_python_command`, which runs
      OSWorld's own fixed path snippets here with that `$HOME`;
    - `returns` (method -> value) and `bytes` (method -> host path): any other method returns that
      value, or the bytes of that file.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        self._files: dict[str, str] = spec.get("files") or {}
        self._data = {path: base64.b64decode(data) for path, data in (spec.get("file_data") or {}).items()}
        self._tree = spec.get("accessibility_tree")
        self._trees: dict[str, Any] = spec.get("directory_trees") or {}
        self._home: str = spec.get("home", "/home/user")
        self._returns: dict[str, Any] = spec.get("returns") or {}
        self._bytes: dict[str, str] = spec.get("bytes") or {}

    def get_file(self, path: str) -> bytes | None:
        if path in self._data:
            return self._data[path]
        host = self._files.get(path)
        return None if host is None else Path(host).read_bytes()

    def get_accessibility_tree(self) -> str | None:
        return self._returns.get("get_accessibility_tree", self._tree)

    def get_vm_desktop_path(self) -> str:
        return self._returns.get("get_vm_desktop_path", f"{self._home}/Desktop")

    def get_vm_directory_tree(self, path: str) -> Any:
        return self._returns.get("get_vm_directory_tree", self._trees.get(path))

    def execute_python_command(self, command: str) -> dict[str, Any]:
        if "execute_python_command" in self._returns:
            return self._returns["execute_python_command"]  # type: ignore[no-any-return]
        saved, buffer = os.environ.get("HOME"), io.StringIO()
        os.environ["HOME"] = self._home
        try:
            with contextlib.redirect_stdout(buffer):
                exec(command, {})  # OSWorld's own fixed snippets (path lookups)
        finally:
            if saved is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = saved
        return {"status": "success", "output": buffer.getvalue(), "error": "", "returncode": 0}

    def __getattr__(self, name: str) -> Any:
        if name in self._returns:
            return lambda *args, **kwargs: self._returns[name]
        if name in self._bytes:
            return lambda *args, **kwargs: Path(self._bytes[name]).read_bytes()
        raise AttributeError(name)


def _env(spec: dict[str, Any]) -> types.SimpleNamespace:
    attributes = dict(spec)
    if "controller" in attributes:
        attributes["controller"] = _Controller(attributes["controller"] or {})
    return types.SimpleNamespace(**attributes)


@contextmanager
def _frozen_now(module: Any, instant: str | None) -> Iterator[None]:
    """The module's `datetime` class replaced by one whose `now(tz)` is `instant` (seen in `tz`)."""
    original = getattr(module, "datetime", None)
    if instant is None or original is not datetime.datetime:
        yield
        return
    fixed = datetime.datetime.fromisoformat(instant)

    class FrozenDatetime(datetime.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
            return fixed.astimezone(tz) if tz is not None else fixed.astimezone().replace(tzinfo=None)

    module.datetime = FrozenDatetime
    try:
        yield
    finally:
        module.datetime = original


def _handle(request: dict[str, Any]) -> dict[str, Any]:
    _stub(request.get("stubs") or [])
    module = importlib.import_module(f"desktop_env.evaluators.{request['module']}")
    function = getattr(module, request["func"])
    args = list(request.get("args") or [])
    if "env" in request:
        args.insert(0, _env(request["env"] or {}))
    try:
        with _frozen_now(module, request.get("now")):
            value = function(*args, **(request.get("kwargs") or {}))
    except Exception as exc:  # the oracle's own exception is a result to compare, not a crash
        return {"ok": False, "error": repr(exc), "type": type(exc).__name__,
                "traceback": traceback.format_exc(limit=5)}
    return {"ok": True, "value": _jsonable(value)}


def serve(handle: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Answer JSON-line requests from stdin with `handle`, one JSON line each on stdout, until EOF.
    An exception escaping `handle` (an import failure, ...) is answered with `setup_error`, and the
    process keeps serving; the served code's own prints go to stderr."""
    out = sys.stdout
    sys.stdout = sys.stderr  # the compared code's prints must not corrupt the reply stream
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = handle(json.loads(line))
        except Exception as exc:
            reply = {"ok": False, "error": repr(exc), "type": type(exc).__name__,
                     "traceback": traceback.format_exc(limit=8), "setup_error": True}
        out.write(json.dumps(reply) + "\n")
        out.flush()


def main() -> None:
    register_parents()
    serve(_handle)


if __name__ == "__main__":
    main()
