"""Real OSWorld tasks, end to end through the whole stack, reach their scripted result (issue 11.4).

Every task under `examples/tasks/osworld/<domain>/` is a verbatim copy of OSWorld's
`evaluation_examples/examples/<domain>/<id>.json`; its scripted solution (UI-TARS replies and the
expected status/reward) is `examples/scripts/osworld/<id>.json`, played by the scripted policy (the
vLLM stand-in: no GPU here). Each task's downloads resolve through the URL cache seeded from
`examples/fixtures/osworld/<domain>/` (files made locally, `make_fixtures.py` beside them): nothing
is fetched at run time. The desktops, apps, Redis, gateway, runners and sink are all real.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.polling import wait_until
from common.task import load_task_file, load_task_set
from services.cli.main import load_expectations
from services.cli.stack import LocalStack, StackConfig
from services.cli.views import matches_expectation

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
OSWORLD_EXAMPLES = ROOT / "examples" / "tasks" / "osworld"
OSWORLD_SCRIPTS = ROOT / "examples" / "scripts" / "osworld"
SHARED_OSWORLD = ROOT.parent / "shared" / "osworld" / "examples"
TASK_FILES = sorted(OSWORLD_EXAMPLES.rglob("*.json"))
#: OSWorld's domains, one directory each in its evaluation_examples/examples.
OSWORLD_DOMAINS = ("chrome", "gimp", "libreoffice_calc", "libreoffice_impress", "libreoffice_writer",
                   "multi_apps", "os", "thunderbird", "vlc", "vs_code")


def test_example_tasks_are_verbatim_osworld_tasks_with_scripts() -> None:
    for path in TASK_FILES:
        domain = path.parent.name
        assert domain in OSWORLD_DOMAINS, path
        original = SHARED_OSWORLD / domain / path.name
        if original.parent.parent.is_dir():  # the benchmark checkout beside the project
            assert json.loads(path.read_text()) == json.loads(original.read_text()), path
        script = json.loads((OSWORLD_SCRIPTS / path.name).read_text())
        assert script["instruction"] == load_task_file(path).instruction, path


def test_every_osworld_domain_has_two_tasks_scripted_to_reward_one() -> None:
    expected = load_expectations(OSWORLD_SCRIPTS)
    solved: dict[str, int] = {domain: 0 for domain in OSWORLD_DOMAINS}
    for path in TASK_FILES:
        if expected[path.stem].get("reward") == 1.0:
            solved[path.parent.name] += 1
    assert {d: n for d, n in solved.items() if n < 2} == {}


@pytest.fixture(scope="module")
def osworld_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One run of every example OSWorld task (one rollout each) on a local stack."""
    config = StackConfig(work_dir=tmp_path_factory.mktemp("osworld-stack"), scripts_dir=ROOT / "examples" / "scripts",
                         envs=4, runners=4, replicas=1, max_infra_retries=1,
                         fixtures_dir=ROOT / "examples" / "fixtures")
    tasks = [task.to_json_dict() for task in load_task_set(OSWORLD_EXAMPLES).tasks]
    with LocalStack(config) as stack, httpx.Client(base_url=stack.producer_url, timeout=30) as client:
        response = client.post("/v1/runs", json={"tasks": tasks, "max_steps": 15, "run_id": "osworld-e2e"})
        assert response.status_code == 201, response.text

        def finished() -> dict[str, Any] | None:
            run: dict[str, Any] = client.get("/v1/runs/osworld-e2e").json()
            return run if run["finished"] else None

        yield wait_until(finished, 60 + 90 * len(tasks), "the OSWorld example run to finish", interval_s=1.0)


@pytest.mark.parametrize("task_file", TASK_FILES, ids=lambda p: f"{p.parent.name}/{p.stem[:8]}")
def test_osworld_task_reaches_its_scripted_result(osworld_run: dict[str, Any], task_file: Path) -> None:
    expected = load_expectations(OSWORLD_SCRIPTS)[task_file.stem]
    rollouts = [r for r in osworld_run["rollouts"] if r["task_id"] == task_file.stem]
    assert len(rollouts) == 1
    rollout = rollouts[0]
    assert matches_expectation(rollout, expected), (
        f"{task_file.stem}: got {rollout['status']}/{rollout['reward']} ({rollout.get('error')}), "
        f"expected {expected}")
