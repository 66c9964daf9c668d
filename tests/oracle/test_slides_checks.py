"""Differential tests of the single-property slides metrics (`metrics/slides/checks.py`,
`metrics/slides/settings.py`) against OSWorld's `desktop_env/evaluators/metrics/slides.py`, on each
task that uses them (rules verbatim), with python-pptx decks, decks as Impress saves them, settings
files and accessibility trees, plus edge cases."""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from pptx.dml.color import RGBColor
from pptx.util import Cm

from services.runner.osworld.metrics.slides import (
    check_auto_saving_time,
    check_image_stretch_and_center,
    check_left_panel,
    check_page_number_colors,
    check_presenter_console_disable,
    check_slide_orientation_Portrait,
    check_transition,
    evaluate_presentation_fill_to_rgb_distance,
)
from tests.oracle.client import Oracle
from tests.oracle.impress_files import COVER, ImpressFiles, impress_files
from tests.oracle.office_support import agree, oracle_raises, rules_of, tasks_using
from tests.oracle.pptx_fixtures import SlideSpec, background, deck, move, transition
from tests.oracle.pptx_fixtures import numbered as numbered_slides

__all__ = ["impress_files"]  # the session fixture, imported for pytest

SLIDES = "metrics.slides"


def _master_blue(prs: Any) -> None:
    fill = prs.slide_masters[0].background.fill
    fill.solid()
    fill.fore_color.rgb = RGBColor(0, 0, 255)


@pytest.mark.parametrize("task_id", tasks_using("check_image_stretch_and_center"))
def test_check_image_stretch_and_center_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                                     impress_files: ImpressFiles) -> None:
    cover = [*COVER, SlideSpec("Process", ["Step 1"])]
    original = deck(tmp_path / "original.pptx", cover)
    cases = {"stretched and centered": (deck(tmp_path / "good.pptx", cover, move(0, 1, left=0, top=0, width=25.4,
                                                                                   height=19.05)), 1.0),
             "within half an inch": (deck(tmp_path / "near.pptx", cover, move(0, 1, left=0.5, top=0.5, width=24.4,
                                                                                height=18.05)), 1.0),
             "proportional, letterboxed": (deck(tmp_path / "ratio.pptx", cover, move(0, 1, left=0, top=1.9,
                                                                                     width=25.4, height=15.24)), 0.0),
             "stretched, not centered": (deck(tmp_path / "offset.pptx", cover, move(0, 1, left=3, top=0, width=25.4,
                                                                                    height=19.05)), 0.0),
             "not changed": (original, 0.0),
             "picture replaced": (deck(tmp_path / "other.pptx", [SlideSpec("Columbus", layout=5, pictures=[
                 ((1, 2, 3), 0, 0, 25.4, 19.05)])]), 0.0)}
    for label, (result, expected) in cases.items():
        assert agree(oracle, SLIDES, check_image_stretch_and_center, result, original) == expected, label
    impress_original = deck(tmp_path / "impress_original.pptx", cover[:1])
    agree(oracle, SLIDES, check_image_stretch_and_center, impress_files.decks["stretched.pptx"], impress_original)
    no_picture = deck(tmp_path / "nopic.pptx", [SlideSpec("Columbus")])
    assert agree(oracle, SLIDES, check_image_stretch_and_center, original, no_picture) == 0.0
    oracle_raises(oracle, SLIDES, check_image_stretch_and_center, str(tmp_path / "missing.pptx"), original)
    oracle_raises(oracle, SLIDES, check_image_stretch_and_center, deck(tmp_path / "empty.pptx", []), original)


def _portrait(prs: Any) -> None:
    prs.slide_width, prs.slide_height = Cm(19.05), Cm(25.4)


@pytest.mark.parametrize("task_id", tasks_using("check_slide_orientation_Portrait"))
def test_check_slide_orientation_portrait_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    slides = numbered_slides(2)
    assert agree(oracle, SLIDES, check_slide_orientation_Portrait, deck(tmp_path / "p.pptx", slides, _portrait)) == 1.0
    assert agree(oracle, SLIDES, check_slide_orientation_Portrait, deck(tmp_path / "l.pptx", slides)) == 0.0

    def square(prs: Any) -> None:
        prs.slide_width = prs.slide_height

    assert agree(oracle, SLIDES, check_slide_orientation_Portrait, deck(tmp_path / "s.pptx", slides, square)) == 0.0
    oracle_raises(oracle, SLIDES, check_slide_orientation_Portrait, str(tmp_path / "missing.pptx"))


@pytest.mark.parametrize("task_id", tasks_using("evaluate_presentation_fill_to_rgb_distance"))
def test_evaluate_presentation_fill_to_rgb_distance_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                                                 impress_files: ImpressFiles) -> None:
    [rules] = rules_of(task_id, "evaluate_presentation_fill_to_rgb_distance")
    slides = numbered_slides(3)
    blue = [background(i, (0, 0, 255)) for i in range(3)]
    cases = {"all blue": (deck(tmp_path / "blue.pptx", slides, *blue), 1.0),
             "master blue": (deck(tmp_path / "master.pptx", slides, _master_blue), 1.0),
             "navy": (deck(tmp_path / "navy.pptx", slides, *(background(i, (0, 0, 128)) for i in range(3))), None),
             "one slide blue": (deck(tmp_path / "one.pptx", slides, blue[0]), None),
             "white as before": (deck(tmp_path / "white.pptx", slides, *(background(i, (255, 255, 255))
                                                                          for i in range(3))), 0.0),
             "unchanged": (deck(tmp_path / "same.pptx", slides), 0.0),
             "as Impress saves it": (impress_files.decks["blue.pptx"], 1.0),
             "Impress, unchanged": (impress_files.decks["plain.pptx"], None)}
    for label, (result, expected) in cases.items():
        value = agree(oracle, SLIDES, evaluate_presentation_fill_to_rgb_distance, result, rules)
        if expected is not None:
            assert value == pytest.approx(expected), label
    assert 0.0 < agree(oracle, SLIDES, evaluate_presentation_fill_to_rgb_distance, cases["navy"][0], rules) < 1.0
    agree(oracle, SLIDES, evaluate_presentation_fill_to_rgb_distance, cases["white as before"][0], {"rgb": [0, 0, 255]})
    oracle_raises(oracle, SLIDES, evaluate_presentation_fill_to_rgb_distance, deck(tmp_path / "e.pptx", []), rules)
    oracle_raises(oracle, SLIDES, evaluate_presentation_fill_to_rgb_distance, cases["all blue"][0], {})


@pytest.mark.parametrize("task_id", tasks_using("check_transition"))
def test_check_transition_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                       impress_files: ImpressFiles) -> None:
    [rules] = rules_of(task_id, "check_transition")
    slides = numbered_slides(2)
    cases = {"dissolve": (deck(tmp_path / "good.pptx", slides, transition("dissolve")), 1.0),
             "as Impress saves it": (impress_files.decks["dissolve.pptx"], 1.0),
             "fade": (deck(tmp_path / "fade.pptx", slides, transition("fade")), 0.0),
             "on slide 2": (deck(tmp_path / "two.pptx", slides, transition("dissolve", 1)), 0.0),
             "none": (deck(tmp_path / "none.pptx", slides), 0.0),
             "no slides": (deck(tmp_path / "empty.pptx", []), 0.0)}
    for label, (result, expected) in cases.items():
        assert agree(oracle, SLIDES, check_transition, result, rules) == expected, label
    oracle_raises(oracle, SLIDES, check_transition, cases["dissolve"][0], {"slide_idx": 0})
    oracle_raises(oracle, SLIDES, check_transition, str(tmp_path / "missing.pptx"), rules)


def _with_number_color(source: str, target: Path, color: str) -> str:
    """`source` with the color of Impress's slide number field in the master replaced by `color`."""
    shutil.copy(source, target)
    with zipfile.ZipFile(source) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    master = members["ppt/slideMasters/slideMaster1.xml"].decode()
    field = master.index('type="slidenum"')
    start = master.index("<a:srgbClr val=", field)
    master = master[:start] + re.sub(r'val="\w+"', f'val="{color}"', master[start:], count=1)
    members["ppt/slideMasters/slideMaster1.xml"] = master.encode()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return str(target)


@pytest.mark.parametrize("task_id", tasks_using("check_page_number_colors"))
def test_check_page_number_colors_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                               impress_files: ImpressFiles) -> None:
    [rules] = rules_of(task_id, "check_page_number_colors")
    plain = impress_files.decks["plain.pptx"]
    # OSWorld reads "RRGGBB" as if it began with "#": the verdicts below are its own (dark blue 2a6099 is "red")
    cases = {"red": ("ff0000", 1.0), "dark red 2": ("c9211e", 1.0), "unchanged gray": ("8b8b8b", 0.0),
             "blue": ("0000ff", 0.0), "dark blue 2": ("2a6099", 1.0), "green": ("00a933", 0.0)}
    for label, (color, expected) in cases.items():
        result = _with_number_color(plain, tmp_path / f"{color}.pptx", color)
        assert agree(oracle, SLIDES, check_page_number_colors, result, rules) == expected, label
        for other in ("blue", "green", "black", "purple"):
            agree(oracle, SLIDES, check_page_number_colors, result, {"color": other})
    assert agree(oracle, SLIDES, check_page_number_colors, plain, rules) == 0.0
    oracle_raises(oracle, SLIDES, check_page_number_colors, deck(tmp_path / "pptx.pptx", numbered_slides(1)), rules)
    oracle_raises(oracle, SLIDES, check_page_number_colors, plain, {})


def _registry(path: Path, items: str) -> str:
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/'
                    f'registry" xmlns:xs="http://www.w3.org/2001/XMLSchema">\n{items}\n</oor:items>\n')
    return str(path)


def _item(path: str, name: str, value: str | None) -> str:
    inner = "" if value is None else f"<value>{value}</value>"
    return f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse">{inner}</prop></item>'


START, SAVE = "/org.openoffice.Office.Impress/Misc/Start", "/org.openoffice.Office.Common/Save/Document"


@pytest.mark.parametrize("task_id", tasks_using("check_presenter_console_disable"))
def test_check_presenter_console_disable_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    cases = {"disabled": (_registry(tmp_path / "off.xcu", _item(START, "EnablePresenterScreen", "false")), 1.0),
             "upper case": (_registry(tmp_path / "up.xcu", _item(START, "EnablePresenterScreen", "FALSE")), 1.0),
             "enabled": (_registry(tmp_path / "on.xcu", _item(START, "EnablePresenterScreen", "true")), 0.0),
             "first setting counts": (_registry(tmp_path / "two.xcu", _item(START, "EnablePresenterScreen", "true")
                                                + _item(START, "EnablePresenterScreen", "false")), 0.0),
             "no value": (_registry(tmp_path / "nil.xcu", _item(START, "EnablePresenterScreen", None)), 0.0),
             "never set": (_registry(tmp_path / "none.xcu", _item(SAVE, "AutoSave", "true")), 0.0),
             "not XML": (_write(tmp_path / "bad.xcu", "<oor:items"), 0.0),
             "missing": (str(tmp_path / "missing.xcu"), 0.0), "no file": (None, 0.0)}
    for label, (result, expected) in cases.items():
        assert agree(oracle, SLIDES, check_presenter_console_disable, result) == expected, label


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("task_id", tasks_using("check_auto_saving_time"))
def test_check_auto_saving_time_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    [rules] = rules_of(task_id, "check_auto_saving_time")
    cases = {"3 minutes": (_registry(tmp_path / "3.xcu", _item(SAVE, "AutoSaveTimeIntervall", "3")), 1.0),
             "10 minutes": (_registry(tmp_path / "10.xcu", _item(SAVE, "AutoSaveTimeIntervall", "10")), 0.0),
             "last item counts": (_registry(tmp_path / "two.xcu", _item(SAVE, "AutoSaveTimeIntervall", "10")
                                            + _item(SAVE, "AutoSaveTimeIntervall", "3")), 1.0),
             "never set": (_registry(tmp_path / "none.xcu", _item(START, "EnablePresenterScreen", "true")), 0.0)}
    for label, (result, expected) in cases.items():
        assert agree(oracle, SLIDES, check_auto_saving_time, result, rules) == expected, label
    for bad in (_registry(tmp_path / "nil.xcu", _item(SAVE, "AutoSaveTimeIntervall", None)),
                _registry(tmp_path / "text.xcu", _item(SAVE, "AutoSaveTimeIntervall", "three")), None):
        oracle_raises(oracle, SLIDES, check_auto_saving_time, bad, rules)
    oracle_raises(oracle, SLIDES, check_auto_saving_time, cases["3 minutes"][0], {})
    # deliberate difference: OSWorld returns None (scored 0) for a missing or malformed file; ours 0.0
    for unreadable in (str(tmp_path / "missing.xcu"), _write(tmp_path / "bad.xcu", "<oor:items")):
        reply = oracle.call(SLIDES, "check_auto_saving_time", unreadable, rules)
        assert reply.ok and reply.value is None
        assert check_auto_saving_time(unreadable, rules) == 0.0


A11Y = ('<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state"><application name="soffice">'
        '<frame name="deck.pptx - LibreOffice Impress">{inner}</frame></application></desktop-frame>')


@pytest.mark.parametrize("task_id", tasks_using("check_left_panel"))
def test_check_left_panel_on_the_tasks(task_id: str, oracle: Oracle) -> None:
    open_panel = A11Y.format(inner='<panel name="Slide Pane"><document-frame name="Slides View" st:showing="true"/>'
                                   '</panel><document-frame name="Normal View"/>')
    closed = A11Y.format(inner='<document-frame name="Normal View"/>')
    assert agree(oracle, SLIDES, check_left_panel, open_panel) == 1.0
    assert agree(oracle, SLIDES, check_left_panel, closed) == 0.0
    assert agree(oracle, SLIDES, check_left_panel, A11Y.format(inner='<panel name="Slides View"/>')) == 0.0
    oracle_raises(oracle, SLIDES, check_left_panel, "<desktop-frame")
    oracle_raises(oracle, SLIDES, check_left_panel, None)
