"""Oracle process for `DesktopEnv.evaluate` (OSWorld `desktop_env/desktop_env.py`): scores evaluator
configs with OSWorld's own `_set_evaluator_info` and `evaluate`, on a `DesktopEnv` built without a VM.
Started with `.venv-oracle/bin/python tests/oracle/evaluate_runner.py`; never imported by the product.

Only what `evaluate` needs runs: no VM, no controller; `postconfig` goes to a recording stand-in of
the `SetupController`. Modules `desktop_env.desktop_env` imports but `evaluate` never uses (gymnasium,
playwright, easyocr, ...) are registered as inert stand-ins. Metric `echo` (added to OSWorld's metrics
here) returns its result argument, so a `rule` getter can make a metric return any value.

Protocol: one JSON request per stdin line `{"evaluator": {...}, "action_history": [...]}`; one JSON
reply per stdout line `{"ok": true, "value": ..., "postconfig": [...]}` or `{"ok": false, "type": ...}`.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import types
from typing import Any

INERT = ["gymnasium", "playwright", "playwright.sync_api", "pydrive", "pydrive.auth", "pydrive.drive",
         "requests_toolbelt", "requests_toolbelt.multipart", "requests_toolbelt.multipart.encoder", "borb",
         "borb.pdf", "easyocr", "acoustid", "librosa", "fastdtw", "dotenv"]


class _Inert(types.ModuleType):
    """An importable stand-in: attributes are stand-ins, calls return stand-ins, classes derive from it."""

    __path__: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert(f"{self.__name__}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Inert(f"{self.__name__}()")

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)


class _SetupRecorder:
    def __init__(self) -> None:
        self.steps: list[Any] = []

    def setup(self, config: list[Any], use_proxy: bool = False) -> bool:
        self.steps.extend(step.get("type") for step in config)
        return True


def _evaluate(desktop_env: Any, request: dict[str, Any]) -> dict[str, Any]:
    env = desktop_env.DesktopEnv.__new__(desktop_env.DesktopEnv)
    env.setup_controller = _SetupRecorder()
    env.action_history = list(request.get("action_history") or [])
    env.enable_proxy = False
    env.is_environment_used = False
    env.cache_dir = tempfile.mkdtemp(prefix="osworld-evaluate-")
    try:
        env._set_evaluator_info({"evaluator": request["evaluator"]})
        value = env.evaluate()
    except Exception as exc:  # OSWorld's own failure is the answer to compare
        return {"ok": False, "type": type(exc).__name__, "error": repr(exc)}
    if isinstance(value, float) and math.isnan(value):
        value = "nan"
    return {"ok": True, "value": value, "postconfig": env.setup_controller.steps}


def main() -> None:
    for name in INERT:
        sys.modules.setdefault(name, _Inert(name))
    out = sys.stdout
    sys.stdout = sys.stderr  # OSWorld's prints must not corrupt the reply stream
    import desktop_env.desktop_env as desktop_env  # noqa: PLC0415 (after the stand-ins)
    from desktop_env.evaluators import metrics  # noqa: PLC0415

    metrics.echo = lambda result, expected=None, **options: result
    for line in sys.stdin:
        if line.strip():
            reply = _evaluate(desktop_env, json.loads(line))
            out.write(json.dumps(reply, default=repr) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
