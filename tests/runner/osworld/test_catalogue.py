"""The producer's catalogue of implemented OSWorld features (`common/osworld_catalogue.json`) against the runner's
live registries: the same names, the same verdict on every OSWorld task, and no evaluation layer in the producer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from common.osworld_features import CATALOGUE, unsupported_by_catalogue
from common.task import OSWorldTask, load_task_set
from services.runner.osworld import unsupported_features
from services.runner.osworld.catalogue import catalogue_text

ROOT = Path(__file__).resolve().parents[3]
OSWORLD_INDEX = ROOT.parent / "shared" / "osworld" / "test_all.json"


def test_catalogue_lists_exactly_the_implemented_names() -> None:
    assert CATALOGUE.read_text() == catalogue_text(), \
        "common/osworld_catalogue.json is stale: run `python -m services.runner.osworld.catalogue`"


def test_catalogue_and_registries_agree_on_every_osworld_task_and_on_unknown_pieces() -> None:
    tasks = load_task_set(OSWORLD_INDEX).tasks
    assert len(tasks) == 369
    unknown = OSWorldTask.model_validate({
        "id": "made-up", "instruction": "x",
        "config": [{"type": "googledrive", "parameters": {}}, {"type": "no_such_step", "parameters": {}}],
        "evaluator": {"func": ["exact_match", "no_such_metric"], "result": {"type": "no_such_getter"},
                      "postconfig": [{"type": "sleep", "parameters": {"seconds": 1}}]}})
    verdicts = {task.id: unsupported_by_catalogue(task) for task in [*tasks, unknown]}
    assert verdicts == {task.id: unsupported_features(task) for task in [*tasks, unknown]}
    assert verdicts["made-up"] == ["setup type 'no_such_step'", "metric 'no_such_metric'",
                                   "getter type 'no_such_getter'"]  # googledrive, sleep, exact_match exist
    assert sum(1 for v in verdicts.values() if not v) > 300  # most of OSWorld runs: the check is not vacuous


def test_the_producer_does_not_import_the_osworld_evaluation_layer() -> None:
    probe = ("import sys, services.task_producer.__main__; "
             "print(sorted(m for m in ('services.runner.osworld', 'pandas', 'cv2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
