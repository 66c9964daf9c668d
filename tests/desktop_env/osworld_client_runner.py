"""Runs OSWorld's own env client, `desktop_env/controllers/python.py` (`PythonController`) and
`desktop_env/controllers/setup.py` (`SetupController`) from its PyPI package `desktop-env`, for the
client suite (`tests/desktop_env/test_osworld_client.py`). Started with
`.venv-oracle/bin/python tests/desktop_env/osworld_client_runner.py`; never imported by the product.

`.venv-oracle` has `desktop-env` installed with `--no-deps` and only the light libraries the two
controllers import (requests, requests-toolbelt, python-dotenv, and what
`evaluators/metrics/utils.py` needs, see `tests/oracle/requirements.txt`). The package's
`__init__` files are skipped by registering the parent packages as plain modules (as
`tests/oracle/runner.py` does). Stubbed, because they need the network or a browser driver:
`playwright` (SetupController's chrome_open_tabs, chrome_close_tabs and login steps) and
`pydrive` (its googledrive step); calling a stub raises, so a test that reached one would fail.

Protocol: one JSON request per stdin line, one JSON reply per stdout line.
Request: `{"controller": "python" | "setup", "init": {...}, "attrs": {...}, "method": str,
"args": [...], "kwargs": {...}}`: constructs the controller with `init`, sets `attrs` (e.g.
`retry_interval`), calls the method. Reply: `{"ok": true, "value": ...}` (bytes as
`{"__bytes__": base64}`) or `{"ok": false, "error": repr, "type": class name, "traceback": str}`.
"""

from __future__ import annotations

import base64
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.oracle.runner import _stub, register_parents, serve  # noqa: E402

_PACKAGES = ("", ".controllers", ".evaluators", ".evaluators.metrics", ".providers", ".providers.aws")
_STUBS = ("playwright.sync_api", "pydrive.auth", "pydrive.drive")


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"__bytes__": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def _handle(request: dict[str, Any]) -> dict[str, Any]:
    if request["controller"] == "python":
        cls = importlib.import_module("desktop_env.controllers.python").PythonController
    else:
        cls = importlib.import_module("desktop_env.controllers.setup").SetupController
    controller = cls(**request.get("init", {}))
    for name, value in request.get("attrs", {}).items():
        setattr(controller, name, value)
    try:
        value = getattr(controller, request["method"])(*request.get("args", []), **request.get("kwargs", {}))
    except Exception as exc:  # OSWorld's own exception is a result the test asserts on
        return {"ok": False, "error": repr(exc), "type": type(exc).__name__,
                "traceback": traceback.format_exc(limit=8)}
    return {"ok": True, "value": _jsonable(value)}


def main() -> None:
    register_parents(_PACKAGES)
    _stub(list(_STUBS))
    serve(_handle)


if __name__ == "__main__":
    main()
