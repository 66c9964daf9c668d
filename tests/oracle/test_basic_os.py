"""Differential tests of `metrics/basic_os` and `metrics/pdf` against OSWorld's own functions, on
the getter values of the tasks that use them and on edge cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfWriter

from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics import basic_os, pdf
from tests.oracle.client import Oracle, same_value
from tests.oracle.tasks import metric_uses


def agree(oracle: Oracle, module: Any, name: str, *args: Any) -> Any:
    theirs = oracle.call(f"metrics.{module.__name__.rsplit('.', 1)[-1]}", name, *args)
    if not theirs.ok:
        with pytest.raises(EvalError):
            getattr(module, name)(*args)
        return theirs.type
    ours = getattr(module, name)(*args)
    assert same_value(ours, theirs.value), f"{name}: ours {ours!r} != OSWorld {theirs.value!r}"
    return ours


_TIMEDATECTL = ("               Local time: Thu 2024-01-25 12:56:06 {abbr}\n           Universal time: Thu 2024-01-25 "
                "12:56:06 UTC\n                 RTC time: Thu 2024-01-25 12:56:05\n                Time zone: {zone}\n"
                "System clock synchronized: yes\n              NTP service: inactive\n          RTC in local TZ: no\n")


def _tree(*names: str) -> dict[str, Any]:
    return {"name": "cpjpg", "type": "directory", "children": [{"name": n, "type": "file"} for n in names]}


def _cases(metric: str, rules: Any) -> dict[str, tuple[Any, Any]]:
    """label -> (getter value, score or OSWorld's exception class) for the task's rules."""
    if metric == "check_gnome_favorite_apps":
        apps = rules["expected"]
        return {"right": (f"{apps!r}\n", 1), "reordered": (f"{list(reversed(apps))!r}\n", 1),
                "vim-kept": (f"{[*apps, 'vim.desktop']!r}\n", 0), "duplicate": (f"{[apps[0], apps[0]]!r}\n", 0),
                "empty": ("@as []\n", "SyntaxError"), "none": (None, "TypeError")}
    if metric == "is_utc_0":
        return {"right": (_TIMEDATECTL.format(abbr="UTC", zone="Etc/UTC (UTC, +0000)"), 1),
                "faroe": (_TIMEDATECTL.format(abbr="WET", zone="Atlantic/Faroe (WET, +0000)"), 1),
                "new-york": (_TIMEDATECTL.format(abbr="EST", zone="America/New_York (EST, -0500)"), 0),
                "short": ("Time zone: UTC\n", "IndexError"), "none": (None, "AttributeError")}
    if metric == "check_moved_jpgs":
        names = rules["expected"]
        return {"right": (_tree(*reversed(names)), 1), "missing": (_tree(*names[1:]), 0),
                "with-png": (_tree(*names, "x.png"), 0), "none": (None, "TypeError")}
    expected = rules["expected"]
    return {"right": (f"{expected}\n", 1), "other": ("/home/user/secret.docx", 0), "empty": ("", 0),
            "none": (None, "TypeError")}


USES = [(m, use) for m in ("check_gnome_favorite_apps", "is_utc_0", "check_moved_jpgs", "is_in_vm_clickboard")
        for use in metric_uses(m)]


@pytest.mark.parametrize(("metric", "use"), USES, ids=[f"{m}-{u.task_id}" for m, u in USES])
def test_basic_os_metrics_match_osworld_on_task_values(oracle: Oracle, metric: str, use: Any) -> None:
    rules = next((getter["rules"] for getter in (use.expected, use.result) if getter and getter["type"] == "rule"),
                 None)  # is_utc_0 has no rule
    for label, (value, want) in _cases(metric, rules).items():
        if metric == "is_in_vm_clickboard":  # OSWorld's order: the rule is the result, the clipboard the expected
            got = agree(oracle, basic_os, metric, rules, value)
        elif metric == "is_utc_0":
            got = agree(oracle, basic_os, metric, value)
        else:
            got = agree(oracle, basic_os, metric, value, rules)
        assert got == want, label


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("check_gnome_favorite_apps", ("['a.desktop']", None)),
        ("check_gnome_favorite_apps", ("'a.desktop'", {"expected": ["a.desktop"]})),
        ("check_gnome_favorite_apps", ("42", {"expected": []})),
        ("check_moved_jpgs", ({"children": []}, {"expected": []})),
        ("check_moved_jpgs", ({"children": [{"type": "file"}]}, {"expected": ["a"]})),
        ("check_moved_jpgs", ({}, {"expected": []})),
        ("is_in_vm_clickboard", ({"expected": ["a", "b"]}, "b a")),
        ("is_in_vm_clickboard", ({"expected": ["a", "c"]}, "b a")),
        ("is_in_vm_clickboard", ({}, "x")),
        ("check_text_enlarged", ("1.25\n",)),
        ("check_text_enlarged", ("1.0",)),
        ("check_text_enlarged", ("large",)),
        ("is_utc_0", ("a\nb\nc\n(UTC, +0000)",)),
    ],
)
def test_basic_os_edges_match_osworld(oracle: Oracle, name: str, args: tuple[Any, ...]) -> None:
    agree(oracle, basic_os, name, *args)


def _pdf(path: Path, pages: int) -> str:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=595, height=842)
    with open(path, "wb") as handle:
        writer.write(handle)
    return str(path)


def test_check_pdf_pages_matches_osworld_on_the_task(oracle: Oracle, tmp_path: Path) -> None:
    (use,) = metric_uses("check_pdf_pages")
    rules = use.expected["rules"]
    for label, pages, want in (("one-page", 1, 1.0), ("two-pages", 2, 0.0), ("empty", 0, 0.0)):
        assert agree(oracle, pdf, "check_pdf_pages", _pdf(tmp_path / f"{label}.pdf", pages), rules) == want, label


@pytest.mark.parametrize(("content", "rules"), [(None, {"relation": "eq", "ref_value": 1}),
                                                (b"plain text", {"relation": "eq", "ref_value": 1}),
                                                ("pdf", {"relation": "lt", "ref_value": 3}),
                                                ("pdf", {"relation": "contains", "ref_value": 1}),
                                                ("pdf", {"relation": "eq"})])
def test_check_pdf_pages_edges_match_osworld(oracle: Oracle, tmp_path: Path, content: Any, rules: Any) -> None:
    path = content
    if content == "pdf":
        path = _pdf(tmp_path / "two.pdf", 2)
    elif isinstance(content, bytes):
        (tmp_path / "x.pdf").write_bytes(content)
        path = str(tmp_path / "x.pdf")
    agree(oracle, pdf, "check_pdf_pages", path, rules)


def test_gnome_favorites_never_evaluates_env_output(tmp_path: Path) -> None:
    """Deliberate difference: OSWorld `eval`s the gsettings output; ours only reads literals."""
    marker = tmp_path / "ran"
    with pytest.raises(EvalError):
        basic_os.check_gnome_favorite_apps(f"__import__('pathlib').Path({str(marker)!r}).touch()", {"expected": []})
    assert not marker.exists()
