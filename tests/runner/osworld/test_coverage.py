"""`cua-rollout coverage`: per-domain counts, missing pieces, requirements, exit code, last line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from common.task import SetupStep, load_task_set
from services.runner.osworld import requirements, setup
from services.runner.osworld.coverage import coverage

ROOT = Path(__file__).resolve().parents[3]
OSWORLD = ROOT.parent / "shared" / "osworld"
RUNNABLE_OS_TASK = "e0df059f-28a6-4169-924f-b9623e7184cc"  # execute/vm_command_line/exact_match only


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.cli.main", "coverage", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _index(tmp_path: Path, tasks: dict[str, list[str]], extra: dict[str, dict[str, object]] | None = None) -> Path:
    for domain, ids in tasks.items():
        (tmp_path / "examples" / domain).mkdir(parents=True, exist_ok=True)
        for task_id in ids:
            source = OSWORLD / "examples" / domain / f"{task_id}.json"
            if source.exists():
                shutil.copy(source, tmp_path / "examples" / domain)
    for path, body in (extra or {}).items():
        (tmp_path / "examples" / path).write_text(json.dumps(body))
    index = tmp_path / "test_all.json"
    index.write_text(json.dumps(tasks))
    return index


def _task(task_id: str, setup_type: str, metric: str) -> dict[str, object]:
    return {"id": task_id, "instruction": "x", "config": [{"type": setup_type, "parameters": {}}],
            "evaluator": {"func": metric, "result": {"type": "rule", "rules": {"expected": "a"}},
                          "expected": {"type": "rule", "rules": {"expected": "a"}}}}


def test_report_counts_missing_pieces_and_invalid_tasks(tmp_path: Path) -> None:
    index = _index(tmp_path, {"os": [RUNNABLE_OS_TASK, "no-such-setup", "missing-file"]},
                   {"os/no-such-setup.json": _task("no-such-setup", "teleport", "no_such_metric")})
    report = coverage(load_task_set(index))
    assert (report.total, report.loadable, report.runnable, report.offline) == (3, 2, 1, 1)
    assert report.missing == {"setup type 'teleport'": 1, "metric 'no_such_metric'": 1}
    assert list(report.invalid) == ["os/missing-file"] and not report.complete


def test_cli_exit_code_json_and_last_line(tmp_path: Path) -> None:
    partial = _index(tmp_path / "a", {"os": [RUNNABLE_OS_TASK, "no-such-setup"]},
                     {"os/no-such-setup.json": _task("no-such-setup", "teleport", "exact_match")})
    result = _cli(str(partial))
    assert result.returncode == 1, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "runnable 1/2"
    assert "setup type 'teleport'" in result.stdout
    as_json = _cli(str(partial), "--json")
    body = json.loads(as_json.stdout[: as_json.stdout.rindex("runnable")])
    assert body["runnable"] == 1 and body["missing"] == {"setup type 'teleport'": 1}
    complete = _index(tmp_path / "b", {"os": [RUNNABLE_OS_TASK]})
    done = _cli(str(complete))
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "runnable 1/1"
    assert _cli(str(tmp_path / "nowhere.json")).returncode == 2


def test_requirements_mark_runnable_tasks_that_are_not_offline(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(setup.NEEDS, "execute", requirements.any_web_url("command"))
    web = _task("web", "execute", "exact_match")
    web["config"] = [{"type": "execute", "parameters": {"command": ["curl", "https://example.org/"]}}]
    index = _index(tmp_path, {"os": [RUNNABLE_OS_TASK, "web"]}, {"os/web.json": web})
    report = coverage(load_task_set(index))
    assert (report.runnable, report.offline) == (2, 1) and report.complete
    assert report.domains[0].needs == {"internet": 1}
    assert report.requirements == {"internet": requirements.EXPLANATIONS["internet"]}


def test_the_osworld_index_loads_whole() -> None:
    report = coverage(load_task_set(OSWORLD / "test_nogdrive.json"))
    assert report.total == report.loadable == 361
    assert not report.invalid


def test_google_drive_tasks_are_runnable_but_marked(tmp_path: Path) -> None:
    """The 8 Google Drive tasks of test_all.json: every piece exists, and each is marked as needing
    Google Drive credentials (its steps and getter fail with that reason when run offline)."""
    report = coverage(load_task_set(OSWORLD / "test_all.json"))
    assert (report.total, report.loadable, report.runnable) == (369, 369, 369) and report.complete
    assert sum(d.needs.get("google_drive", 0) for d in report.domains) == 8
    assert "Google Drive credentials" in report.requirements["google_drive"]


def test_google_drive_steps_and_getter_fail_with_the_reason(tmp_path: Path) -> None:
    from services.runner.osworld import EvalContext, EvalError, SetupContext, SetupError, get_state, run_setup
    from tests.runner.osworld.test_setup import FakeEnv

    ctx = SetupContext(client_password="pw", screen=(1920, 1080), cache_dir=tmp_path)
    for step in ({"type": "googledrive", "parameters": {"settings_file": "s.yml", "operation": ["delete"]}},
                 {"type": "login", "parameters": {"settings_file": "s.json", "platform": "googledrive"}}):
        with pytest.raises(SetupError, match="needs Google Drive credentials"):
            run_setup([SetupStep.model_validate(step)], FakeEnv(), ctx)
    with pytest.raises(SetupError, match="platform 'dropbox' is not implemented"):
        run_setup([SetupStep(type="login", parameters={"platform": "dropbox"})], FakeEnv(), ctx)
    with pytest.raises(EvalError, match="needs Google Drive credentials"):
        get_state(FakeEnv(), {"type": "googledrive_file", "settings_file": "s.yml"},
                  EvalContext(setup=ctx, cache_dir=tmp_path, work_dir=tmp_path))
