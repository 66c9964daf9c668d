"""Shared helpers of the office differential tests (`test_docs_*.py`, `test_slides_*.py`,
`test_impress_getters.py`): the OSWorld tasks that use a metric, their options and rules verbatim,
one assertion that runs our function and OSWorld's on the same inputs, and LibreOffice
round-trips of fixture files (files as Writer / Impress save them)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from services.runner.osworld.errors import EvalError
from tests.oracle.client import Oracle, same_value

OSWORLD = Path(__file__).resolve().parents[3] / "shared" / "osworld"
INDEX = OSWORLD / "test_nogdrive.json"


@cache
def _index_tasks() -> list[dict[str, Any]]:
    index = json.loads(INDEX.read_text())
    return [json.loads((OSWORLD / "examples" / domain / f"{task_id}.json").read_text())
            for domain, ids in index.items() for task_id in ids]


def _funcs(task: dict[str, Any]) -> list[str]:
    func = task["evaluator"]["func"]
    return [func] if isinstance(func, str) else list(func)


def tasks_using(metric: str) -> list[str]:
    """Ids of the tasks of `test_nogdrive.json` whose evaluator uses `metric`, in index order."""
    return [task["id"] for task in _index_tasks() if metric in _funcs(task)]


def tasks_with_getter(getter: str) -> list[str]:
    """Ids of the tasks whose evaluator has a `result` or `expected` getter of type `getter`."""
    found = []
    for task in _index_tasks():
        evaluator = task["evaluator"]
        configs = [c for key in ("result", "expected") for c in
                   (evaluator.get(key) if isinstance(evaluator.get(key), list) else [evaluator.get(key)]) if c]
        if any(config.get("type") == getter for config in configs):
            found.append(task["id"])
    return found


def task(task_id: str) -> dict[str, Any]:
    """The task's JSON as OSWorld ships it."""
    return next(t for t in _index_tasks() if t["id"] == task_id)


def metric_uses(task_id: str, metric: str) -> list[tuple[dict[str, Any], Any]]:
    """(options, expected getter config) of every use of `metric` in the task's evaluator, verbatim."""
    evaluator = task(task_id)["evaluator"]
    funcs = _funcs(task(task_id))
    options, expected = evaluator.get("options"), evaluator.get("expected")
    uses = []
    for index, name in enumerate(funcs):
        if name != metric:
            continue
        opts = options[index] if isinstance(options, list) else options
        exp = expected[index] if isinstance(expected, list) and isinstance(evaluator["func"], list) else expected
        uses.append((opts or {}, exp))
    return uses


def rules_of(task_id: str, metric: str) -> list[Any]:
    """The `rules` of each `rule` expected getter of `metric` in the task, verbatim."""
    return [exp["rules"] for _, exp in metric_uses(task_id, metric) if isinstance(exp, dict) and "rules" in exp]


_ORACLE_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="oracle-call")
"""Waits for the oracle's reply while ours computes (the oracle is another process: the two run in parallel)."""


def agree(oracle: Oracle, module: str, ours: Callable[..., Any], *args: Any, stubs: tuple[str, ...] = (),
          **kwargs: Any) -> Any:
    """Run OSWorld's `<module>.<ours.__name__>` and ours on the same arguments and assert they agree:
    the same value, or both failing (ours with EvalError). Returns the common value (None on failure)."""
    name = getattr(ours, "__wrapped__", ours).__name__
    pending = _ORACLE_THREAD.submit(oracle.call, module, name, *args, stubs=stubs, **kwargs)
    value: Any = None
    error: EvalError | None = None
    try:
        value = ours(*args, **kwargs)
    except EvalError as exc:
        error = exc
    reply = pending.result()
    if not reply.ok:
        assert error is not None, f"{name}{args!r} {kwargs!r}: OSWorld raised {reply.error}, ours returned {value!r}"
        return None
    assert error is None, f"{name}{args!r} {kwargs!r}: ours raised {error}, OSWorld returned {reply.value!r}"
    assert same_value(value, reply.value), f"{name}{args!r} {kwargs!r}: ours {value!r}, OSWorld {reply.value!r}"
    return value


def oracle_raises(oracle: Oracle, module: str, ours: Callable[..., Any], *args: Any, stubs: tuple[str, ...] = (),
                  **kwargs: Any) -> str:
    """Assert OSWorld's function raises on these arguments and ours raises EvalError; returns
    OSWorld's exception class name."""
    name = getattr(ours, "__wrapped__", ours).__name__
    reply = oracle.call(module, name, *args, stubs=stubs, **kwargs)
    assert not reply.ok, f"OSWorld's {name} returned {reply.value!r}"
    with pytest.raises(EvalError, match=name):
        ours(*args, **kwargs)
    return str(reply.type)


def libreoffice_convert(sources: list[Path], out_dir: Path, profile: Path, ext: str | None = None) -> dict[str, Path]:
    """Open each file in LibreOffice (headless) and save it as Writer or Impress saves it
    (`soffice --convert-to`): in format `ext`, or in its own format when `ext` is None (one soffice
    run per format). Returns source file name -> saved file in `out_dir`.
    Raises: AssertionError when soffice is missing or saves nothing."""
    soffice = shutil.which("soffice")
    assert soffice, "LibreOffice (soffice) is required by the office differential tests"
    out_dir.mkdir(parents=True, exist_ok=True)
    saved: dict[str, Path] = {}
    for suffix in sorted({source.suffix for source in sources}):
        batch = [source for source in sources if source.suffix == suffix]
        target_ext = ext or suffix.lstrip(".")
        subprocess.run([soffice, f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore",
                        "--convert-to", target_ext, "--outdir", str(out_dir), *map(str, batch)],
                       check=True, capture_output=True, timeout=180)
        for source in batch:
            target = out_dir / f"{source.stem}.{target_ext}"
            assert target.is_file(), f"LibreOffice did not save {source} as .{target_ext}"
            saved[source.name] = target
    return saved
