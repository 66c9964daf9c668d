"""What keeps an OSWorld task from running offline (services/runner/osworld/offline.py) and how `coverage`
counts it: package installs and web fetches in setup commands, tasks solved online, a missing app."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.task import OSWorldTask, load_task_set
from services.runner.osworld import offline
from services.runner.osworld.coverage import coverage
from services.runner.osworld.support import task_requirements

NOGDRIVE = Path(__file__).resolve().parents[3].parent / "shared" / "osworld" / "test_nogdrive.json"


@pytest.mark.parametrize(("command", "online"), [
    ("echo {CLIENT_PASSWORD} | sudo -S apt update -y && echo {CLIENT_PASSWORD} | sudo -S apt install jq -y", True),
    (["pip", "install", "pygame"], True),
    ("echo pw | sudo -S pip install pysrt", True),
    (["pip", "install", "/home/user/cssselect-1.3.0-py3-none-any.whl"], False),  # a local wheel
    ("git clone https://github.com/x/y", True),
    ("curl -s http://localhost:8080/requests/status.xml", False),
    ("wget https://example.com/a.zip -O a.zip", True),
    (["apt", "list", "--installed"], False),
    ("tar -xzv -f /home/user/x.tar.gz -C /home/user/", False),
])
def test_commands_that_install_or_fetch_need_the_network(command: object, online: bool) -> None:
    assert (offline.command_needs({"command": command}) == {offline.ONLINE_SETUP}) is online


def _task(task_id: str, instruction: str, domain: str = "os") -> OSWorldTask:
    return OSWorldTask.model_validate({"id": task_id, "instruction": instruction, "snapshot": domain,
                                       "evaluator": {"func": "infeasible"}})


def test_tasks_solved_online_and_missing_apps(monkeypatch: pytest.MonkeyPatch) -> None:
    assert offline.ONLINE_TASK in task_requirements(_task("t1", "Stream https://cdn.example/x.m3u8 in VLC"))
    assert offline.ONLINE_TASK not in task_requirements(_task("t2", "Play http://localhost:8000/a.mp4"))
    assert task_requirements(_task("48c46dc7-ec3e-4b25-a8a2-77cf51e3f5c3", "open github homepage"))[
        offline.ONLINE_TASK] == [offline.ONLINE_TASKS["48c46dc7-ec3e-4b25-a8a2-77cf51e3f5c3"]]
    monkeypatch.setattr(offline, "app_installed", lambda command: command != "code-server")
    assert task_requirements(_task("t3", "Open settings", "vs_code"))[offline.MISSING_APP] == \
        ["code-server is not installed"]
    assert offline.MISSING_APP not in task_requirements(_task("t4", "Open a sheet", "libreoffice_calc"))
    assert offline.task_needs("t5", "os", "Set UTC", '{"command": "timedatectl status"}')[offline.MISSING_APP] == \
        [offline.MISSING_COMMANDS["timedatectl"]]


@pytest.mark.skipif(not NOGDRIVE.is_file(), reason="OSWorld's index is not in ../shared/osworld")
def test_coverage_leaves_online_tasks_out_of_offline() -> None:
    report = coverage(load_task_set(NOGDRIVE))
    by_domain = {d.domain: d for d in report.domains}
    assert by_domain["chrome"].needs.get(offline.ONLINE_SETUP) == 3  # 6766f2b8, 3299584d, 9656a811: apt
    assert by_domain["vlc"].needs.get(offline.ONLINE_TASK) == 1  # bba3381f: a network stream
    assert by_domain["os"].needs.get(offline.ONLINE_SETUP) == 1  # 5812b315: apt-get install expect
    assert report.runnable == 361 and report.offline < 313
    assert offline.ONLINE_SETUP in report.requirements and offline.ONLINE_TASK in report.requirements
