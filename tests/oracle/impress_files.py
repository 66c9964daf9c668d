"""Presentations as LibreOffice Impress saves them, for the slides differential tests: one soffice
run per test session re-saves a sample of the `compare_pptx_files` task fixtures and the decks of
the single-property checks."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.oracle.office_support import libreoffice_convert
from tests.oracle.pptx_fixtures import SlideSpec, background, deck, move, numbered, transition
from tests.oracle.pptx_tasks_a import TASKS_A, TaskFiles
from tests.oracle.pptx_tasks_b import TASKS_B

TASKS = {**TASKS_A, **TASKS_B}
LIBREOFFICE_SAMPLE = ["550ce7e7-747b-495f-b122-acdc4d0b8e54", "a434992a-89df-4577-925c-0c58b747f0f4",
                      "841b50aa-df53-47bd-a73a-22d3a9f73160", "57667013-ea97-417c-9dce-2713091e6e2a",
                      "986fc832-6af2-417c-8845-9272b3a1528b", "f23acfd2-c485-4b7c-a1e7-d4303ddfe864",
                      "15aece23-a215-4579-91b4-69eec72e18da", "a53f80cd-4a90-4490-8310-097b011433f6"]
"""Tasks whose files are also compared as Impress saves them (gold and results re-saved by LibreOffice)."""
IMPRESS_SCORES = {("57667013-ea97-417c-9dce-2713091e6e2a", "title only"): 0.0}
"""Best scores that differ once Impress has saved the files: Impress writes every run's color, so
runs without a color of their own (skipped by the comparison) no longer exist."""
PHOTO = ((120, 90, 60), 3, 5, 10, 6)
COVER = [SlideSpec("Columbus", layout=5, pictures=[PHOTO])]


@dataclass(frozen=True)
class ImpressFiles:
    """`tasks`: task id -> its fixture files as Impress saves them; `decks`: file name -> a deck of
    the single-property checks as Impress saves it (stretched.pptx: the cover picture stretched over
    the slide, dissolve.pptx: a dissolve transition on slide 1, blue.pptx: blue backgrounds,
    plain.pptx: two plain slides, whose master holds Impress's slide number field)."""

    tasks: dict[str, TaskFiles]
    decks: dict[str, str]


def _check_decks(root: Path) -> list[Path]:
    return [Path(p) for p in (
        deck(root / "stretched.pptx", COVER, move(0, 1, left=0, top=0, width=25.4, height=19.05)),
        deck(root / "dissolve.pptx", numbered(2), transition("dissolve")),
        deck(root / "blue.pptx", numbered(2), background(0, (0, 0, 255)), background(1, (0, 0, 255))),
        deck(root / "plain.pptx", numbered(2)))]


_BUILT: list[ImpressFiles] = []


@pytest.fixture(scope="session")
def impress_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ImpressFiles]:
    """The files above, built once per session whichever module asks first."""
    if not _BUILT:
        root = tmp_path_factory.mktemp("impress")
        flat, built = root / "flat", {}
        flat.mkdir()
        for task_id in LIBREOFFICE_SAMPLE:
            golds, cases = TASKS[task_id](root / task_id[:8])
            built[task_id] = (golds, cases)
            for path in [*golds, *(result for _, result, _ in cases if result)]:
                shutil.copy(path, flat / f"{task_id[:8]}_{Path(path).name}")
        checks = _check_decks(root / "checks")
        for path in checks:
            shutil.copy(path, flat / path.name)
        saved = libreoffice_convert(sorted(flat.iterdir()), root / "saved", root / "profile")

        def resaved(task_id: str, path: str) -> str:
            return str(saved[f"{task_id[:8]}_{Path(path).name}"])

        tasks = {task_id: ([resaved(task_id, g) for g in golds],
                           [(label, resaved(task_id, r) if r else None, IMPRESS_SCORES.get((task_id, label), best))
                            for label, r, best in cases])
                 for task_id, (golds, cases) in built.items()}
        _BUILT.append(ImpressFiles(tasks, {path.name: str(saved[path.name]) for path in checks}))
    yield _BUILT[0]
