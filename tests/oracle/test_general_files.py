"""Differential tests of the file and document metrics of `metrics/general` against OSWorld's own
functions, on fixtures of every task of `test_nogdrive.json` that uses them (the files the task's
getters would fetch: command outputs captured by its postconfig, the agent's files, gold files) and
on edge cases."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docx
import pytest

from tests.oracle.client import Oracle
from tests.oracle.tasks import MetricUse, metric_uses
from tests.oracle.test_general_values import agree

Candidates = dict[str, tuple[Any, float | None]]  # label -> (file content, score; None: strictly between 0 and 1)

CHECK_LIST: dict[tuple[str, str], Candidates] = {
    ("415ef462", "diff.out"): {"right": ("", 1.0), "differs": ("Binary files a and b differ\n", 0.0)},
    ("e1fc0df3", "grep.out"): {"right": ("/usr/lib/libreoffice/share/extensions/org.openoffice.languagetool.oxt\n",
                                         1.0), "empty": ("", 0.0)},
    ("e1fc0df3", "apt.out"): {"right": ("openjdk-17-jre/stable,now 17.0.9+9-1 amd64 [installed]\n", 1.0),
                              "default-jre": ("default-jre/stable 2:1.17-74 amd64\n", 0.0)},
    ("f8369178", "gsettings.out"): {"right": ("'Orchis-Dark'\n", 1.0), "yaru": ("'Yaru'\n", 0.0)},
    ("48c46dc7", "wmctrl.out"): {
        "right": ("0x03a00004  0 org.gnome.Nautilus.Org.gnome.Nautilus  vm OSWorld\n0x04000006  0 "
                  "gnome-terminal-server.Gnome-terminal  vm user@vm: ~/Documents/Projects/OSWorld\n", 1.0),
        "home-terminal": ("0x03a00004  0 org.gnome.Nautilus.Org.gnome.Nautilus  vm OSWorld\n0x04000006  0 "
                          "gnome-terminal-server.Gnome-terminal  vm user@vm: ~\n", 0.0)},
    ("9bc3cc16", "emails.bak.ls"): {"right": ("歡迎使用新的 Outlook.com 帳戶.eml\r\nA Test E-mail.eml\r\n", 1.0),
                                    "one": ("A Test E-mail.eml\n", 0.0)},
    ("d38192b0", "check-attachments.output"): {"right": ("Attachment added!\n", 1.0), "none": ("\n", 0.0)},
    ("a10b69e1", "thunder-local-folder.ls"): {"right": ("COMPANY\nCOMPANY.msf\nTrash.msf\nUNIVERSITY\nUNIVERSITY.msf\n",
                                                        1.0), "company-only": ("COMPANY\nCOMPANY.msf\n", 0.0),
                                              "msf-only": ("COMPANY.msf\nUNIVERSITY.msf\n", 0.0)},
}

_BACKGROUND = "browser.browserAction.onClicked.addListener(() => {\n  console.log('clicked');\n});\n"
_HTML = "<!DOCTYPE html>\n<html>\n<head><link rel=\"stylesheet\" href=\"style.css\"></head>\n<body>\n</body>\n</html>\n"
_TEX = "\\chapter{Early Buildings}\nThe old library stood\nbeside the lake.\nIts bricks were red.\n"
DIFF_TEXT: dict[tuple[str, str], tuple[str, Candidates]] = {
    ("74d5859f", "background_script.js"): (_BACKGROUND, {"right": (_BACKGROUND, 1.0), "edited": (
        _BACKGROUND.replace("clicked')", "hello')"), None), "empty": ("", 0.0)}),
    ("74d5859f", "index.html"): (_HTML, {"right": (_HTML, 1.0), "no-css": (_HTML.replace(
        "<head><link rel=\"stylesheet\" href=\"style.css\"></head>\n", ""), None)}),
    ("74d5859f", "style.css"): ("body {\n  width: 100px;\n}\n", {"right": ("body {\n  width: 100px;\n}\n", 1.0),
                                                                 "crlf": ("body {\r\n  width: 100px;\r\n}\r\n", 1.0)}),
    ("74d5859f", "script.js"): ("", {"right": ("", 1.0), "extra": ("console.log(1);\n", 0.0)}),
    ("788b3701", "download.tex"): (_TEX, {"right": (_TEX, 1.0), "other-chapter": ("\\chapter{Lake}\nWater.\n", 0.0),
                                          "half": (_TEX.replace("red", "blue").replace("lake", "sea"), None)}),
}


def _write(path: Path, content: Any) -> str:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return str(path)


def _check(oracle: Oracle, metric: str, path: str, rules: Any, score: float | None, label: str,
           **options: Any) -> None:
    value = agree(oracle, metric, path, rules, **options)
    if score is None:
        assert 0.0 < value < 1.0, label
    else:
        assert value == score, label


def _uses(metric: str) -> list[MetricUse]:
    return metric_uses(metric)


@pytest.mark.parametrize("use", _uses("check_list"), ids=lambda use: f"{use.task_id}-{use.result['path']}")
def test_check_list_matches_osworld_on_task_outputs(oracle: Oracle, tmp_path: Path, use: MetricUse) -> None:
    for label, (text, score) in CHECK_LIST[(use.task_id[:8], use.result["path"])].items():
        _check(oracle, "check_list", _write(tmp_path / label, text), use.expected["rules"], score, label)


@pytest.mark.parametrize("use", _uses("diff_text_file"), ids=lambda use: f"{use.task_id}-{use.result['dest']}")
def test_diff_text_file_matches_osworld_on_task_files(oracle: Oracle, tmp_path: Path, use: MetricUse) -> None:
    gold, candidates = DIFF_TEXT[(use.task_id[:8], use.result["dest"])]
    gold_path = _write(tmp_path / "gold", gold)
    for label, (text, score) in candidates.items():
        _check(oracle, "diff_text_file", _write(tmp_path / label, text), gold_path, score, label)


_MANIFEST = {"manifest_version": 2, "name": "happy-extension", "version": "0.0.1", "description": "",
             "background": {"scripts": ["background_script.js"]},
             "browser_action": {"default_icon": {"64": "icons/icon.png"}, "default_popup": "browserAction/index.html",
                                "default_title": "happy-extension"}}
_CONFIG = "title: My site\nname: Test Account\nauthor:\n  name: Test Account\n  email: Test@gmail.com\n  bio: ''\n"
_XUL = {"chrome://messenger/content/messenger.xhtml": {"folderTree": {"mode": "smart,tags"}, "messengerWindow": {}}}
CHECK_JSON: dict[str, Candidates] = {
    "74d5859f": {"right": (json.dumps(_MANIFEST, indent=2), 1.0),
                 "version": (json.dumps({**_MANIFEST, "version": "0.1.0"}), 0.0),
                 "no-title": (json.dumps({**_MANIFEST, "browser_action": {"default_popup": "x"}}), 0.0),
                 "truncated": (json.dumps(_MANIFEST)[:-3], 0.0)},
    "e2392362": {"right": (_CONFIG, 1.0), "email": (_CONFIG.replace("Test@gmail.com", "test@gmail.com"), 0.0),
                 "empty": ("", 0.0), "broken": ("name: [unclosed\n", 0.0)},
    "3f49d2cc": {"right": (json.dumps(_XUL), 1.0),
                 "all-folders": (json.dumps({**_XUL, "chrome://messenger/content/messenger.xhtml": {
                     "folderTree": {"mode": "all"}}}), 0.0),
                 "no-mode": (json.dumps({"chrome://messenger/content/messenger.xhtml": {"folderTree": {}}}), 0.0)},
}


@pytest.mark.parametrize("use", _uses("check_json"), ids=lambda use: use.task_id)
def test_check_json_matches_osworld_on_task_files(oracle: Oracle, tmp_path: Path, use: MetricUse) -> None:
    for label, (text, score) in CHECK_JSON[use.task_id[:8]].items():
        _check(oracle, "check_json", _write(tmp_path / label, text), use.expected["rules"], score, label,
               **use.options)


def _sar(samples: int) -> str:
    lines = ["Linux 6.5.0 (vm) \t01/02/2024 \t_x86_64_\t(4 CPU)", "",
             "10:00:00 AM     CPU     %user     %nice   %system   %iowait    %steal     %idle"]
    lines += [f"10:00:{i:02d} AM     all      2.01      0.00      1.00      0.00      0.00     96.99"
              for i in range(1, samples + 1)]
    return "\n".join([*lines, "Average:        all      2.00      0.00      1.00      0.00      0.00     97.00", ""])


FILE_CONTAINS: dict[str, Candidates] = {
    "26660ad1": {"right": ("Ping: 12 ms\nDownload: 95.3 Mbps\nUpload: 40.1 Mbps\n", 1.0),
                 "no-upload": ("Ping: 12 ms\nDownload: 95.3 Mbps\n", 0.0)},
    "2373b66a": {"right": (_sar(30), 1.0), "mpstat": (_sar(30).replace("%user", "%usr"), 0.0)},
}
LINE_NUMBER: Candidates = {"right": (_sar(30), 1.0), "29-samples": (_sar(29), 0.0), "latin1": (
    _sar(30).replace("Linux", "Lïnux").encode("latin-1"), 0.0)}


@pytest.mark.parametrize("use", _uses("file_contains") + _uses("check_line_number"),
                         ids=lambda use: use.task_id)
def test_file_contains_and_check_line_number_match_osworld(oracle: Oracle, tmp_path: Path, use: MetricUse) -> None:
    metric = "check_line_number" if use.expected["rules"]["expected"] == "31" else "file_contains"
    candidates = LINE_NUMBER if metric == "check_line_number" else FILE_CONTAINS[use.task_id[:8]]
    for label, (text, score) in candidates.items():
        _check(oracle, metric, _write(tmp_path / label, text), use.expected["rules"], score, label)


_ACCOUNTS = "url,user,password\nimap://imap.gmail.com,me@gmail.com,pw\n"
CHECK_CSV: dict[str, Candidates] = {
    "dfac9ee8": {"right": (_ACCOUNTS, 1.0),
                 "still-there": (_ACCOUNTS + "imap://outlook.office365.com,anonym-x2024@outlook.com,\n", 0.0)},
    "15c3b339": {"right": (_ACCOUNTS + "imap://outlook.office365.com,anonym-x2024@outlook.com,password\n"
                           "smtp://smtp.office365.com,anonym-x2024@outlook.com,password\n", 1.0),
                 "no-smtp": (_ACCOUNTS + "imap://outlook.office365.com,anonym-x2024@outlook.com,password\n", 0.0),
                 "no-password": (_ACCOUNTS + "imap://outlook.office365.com,anonym-x2024@outlook.com,\n"
                                 "smtp://smtp.office365.com,anonym-x2024@outlook.com,\n", 0.0)},
}


@pytest.mark.parametrize("use", _uses("check_csv"), ids=lambda use: use.task_id)
def test_check_csv_matches_osworld_on_task_files(oracle: Oracle, tmp_path: Path, use: MetricUse) -> None:
    for label, (text, score) in CHECK_CSV[use.task_id[:8]].items():
        _check(oracle, "check_csv", _write(tmp_path / label, text), use.expected["rules"], score, label)


def _docx(path: Path, paragraphs: list[str]) -> str:
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    document.save(str(path))
    return str(path)


def test_fuzzy_place_math_matches_osworld_on_the_task(oracle: Oracle, tmp_path: Path) -> None:
    (use,) = _uses("fuzzy_place_math")
    answers = use.expected["rules"]["expected"]
    candidates: dict[str, tuple[list[str], float | None]] = {
        "right": ([answers[0], "", answers[3], answers[5]], 1.0),
        "near": ([answers[0][:-1], answers[2], answers[4] + "旁"], None),
        "four": (answers[:4], 0.0),
        "with-spaces": ([f"{answers[0]} 24小时", answers[1]], None),
    }
    for label, (paragraphs, score) in candidates.items():
        _check(oracle, "fuzzy_place_math", _docx(tmp_path / f"{label}.docx", paragraphs), use.expected["rules"],
               score, label)


_GOLD_PY = "import torch\n\n# hyperparameters\nbatch_size = 16\n\n\ndef get_batch(split):\n\tdata = split\n" \
           "\treturn data\n"


def test_compare_python_pure_text_matches_osworld_on_the_task(oracle: Oracle, tmp_path: Path) -> None:
    (use,) = _uses("compare_python_pure_text")
    gold = _write(tmp_path / "gold.py", _GOLD_PY)
    candidates: Candidates = {
        "right": ("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n" + _GOLD_PY.replace("\t", "    ") + "\n\n", 1.0),
        "trailing-blanks": (_GOLD_PY.replace("= 16\n", "= 16   \n"), 1.0),
        "markdown": ("# Building a GPT\n" + _GOLD_PY, 0.0),
        "docstring": (_GOLD_PY.replace("import torch\n", 'import torch\n"""notes"""\n'), 0.0),
        "binary": (b"\xff\xfe\x00", 0.0),
    }
    for label, (text, score) in candidates.items():
        _check(oracle, "compare_python_pure_text", _write(tmp_path / f"{label}.py", text), gold, score, label)


def _gloda(path: Path, starred: list[int]) -> str:
    with sqlite3.connect(path) as db:
        db.execute("create table messages (id integer primary key, folderID integer, subject text)")
        db.execute("create table messageAttributes (messageID integer, attributeID integer, value integer)")
        db.executemany("insert into messages values (?, ?, ?)", [(1, 13, "bill 1"), (2, 13, "bill 2"), (3, 7, "x")])
        db.executemany("insert into messageAttributes values (?, 58, 1)", [(m,) for m in starred])
    return str(path)


def test_run_sqlite3_matches_osworld_on_the_task(oracle: Oracle, tmp_path: Path) -> None:
    (use,) = _uses("run_sqlite3")
    rules = use.expected["rules"]
    for label, starred, score in (("right", [1, 2], 1.0), ("one", [1], 1.0), ("other-folder", [3], 0.0)):
        _check(oracle, "run_sqlite3", _gloda(tmp_path / f"{label}.sqlite", starred), rules, score, label)


_A11Y = ('<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" '
         'xmlns:attr="https://accessibility.ubuntu.example.org/ns/attributes" name="main">'
         '<application name="Thunderbird">{body}</application></desktop-frame>')
_PILL = '<section attr:class="address-pill"><label attr:class="pill-label" name="{who}@someuniversity.edu"/></section>'


def _compose(*people: str) -> str:
    pills = "".join(_PILL.format(who=who) for who in people)
    return _A11Y.format(body=f'<tool-bar attr:id="MsgHeadersToolbar"><label name="To"/>{pills}</tool-bar>')


A11Y: dict[str, Candidates] = {
    "f5c13cdd": {"right": (_compose("fox", "iron", "nancy", "stella"), 1.0),
                 "three": (_compose("fox", "iron", "nancy"), 0.0), "none": (_compose(), 0.0)},
    "7b1e1ff9": {"right": (_A11Y.format(body='<page-tab-list attr:id="tabmail-tabs"><page-tab name="Inbox"/>'
                                             '<page-tab name="About Profiles"/></page-tab-list>'), 1.0),
                 "dialog": (_A11Y.format(body='<dialog name="About Profiles"/>'), 0.0)},
}


@pytest.mark.parametrize("use", _uses("check_accessibility_tree"), ids=lambda use: use.task_id)
def test_check_accessibility_tree_matches_osworld_on_task_trees(oracle: Oracle, use: MetricUse) -> None:
    for label, (xml, score) in A11Y[use.task_id[:8]].items():
        assert agree(oracle, "check_accessibility_tree", xml, use.expected["rules"]) == score, label


Maker = Callable[[Path], Any]


@pytest.mark.parametrize(
    ("metric", "make_result", "rules", "options"),
    [
        ("check_list", lambda d: None, {"expect": ["x"]}, {}),
        ("check_list", lambda d: str(d / "absent"), {"expect": ["x"]}, {}),
        ("check_list", lambda d: _write(d / "f", "a\n"), None, {}),
        ("check_list", lambda d: _write(d / "f", "a\n"), {"expect": ["(unclosed"]}, {}),
        ("check_list", lambda d: _write(d / "f", "a\r\nb\n"), {"expect": ["a\\n", "^b$"], "unexpect": ["\\r"]}, {}),
        ("check_csv", lambda d: None, {"expect": [{"a": "1"}]}, {}),
        ("check_csv", lambda d: _write(d / "f", "a,b\n1,2\n"), {"expect": [{"a": "1", "c": None}]}, {}),
        ("check_csv", lambda d: _write(d / "f", "a,b\n1,2\n"), {}, {}),
        ("check_csv", lambda d: str(d / "absent"), {}, {}),
        ("diff_text_file", lambda d: None, "gold", {}),
        ("diff_text_file", lambda d: _write(d / "f", "a\n"), None, {}),
        ("diff_text_file", lambda d: str(d / "absent"), "gold", {}),
        ("file_contains", lambda d: str(d / "absent"), {"expected": ["a"]}, {}),
        ("file_contains", lambda d: _write(d / "f", "a\n"), {}, {}),
        ("check_line_number", lambda d: _write(d / "f", "12:00:00\n"), {"expected": "one"}, {}),
        ("check_line_number", lambda d: None, {"expected": "1"}, {}),
        ("compare_python_pure_text", lambda d: str(d / "absent"), "gold", {}),
        ("run_sqlite3", lambda d: None, {"sql": "select 1"}, {}),
        ("run_sqlite3", lambda d: _gloda(d / "g.sqlite", []), {"sql": "select 5"}, {}),
        ("run_sqlite3", lambda d: _gloda(d / "g.sqlite", []), {"sql": "select id from messages where id > 9"}, {}),
        ("run_sqlite3", lambda d: _gloda(d / "g.sqlite", []), {"sql": "select nope from messages"}, {}),
        ("fuzzy_place_math", lambda d: None, {"expected": ["a"]}, {}),
        ("fuzzy_place_math", lambda d: _write(d / "f.docx", "not a docx"), {"expected": ["a"]}, {}),
        ("check_json", lambda d: None, {"expect": []}, {}),
        ("check_json", lambda d: _write(d / "f", "null"), {"expect": [{"key": [], "method": "eq", "ref": None}]}, {}),
        ("check_json", lambda d: _write(d / "f", '{"a": [1]}'), {"expect": [{"key": ["a", 3], "method": "eq",
                                                                             "ref": 1}]}, {}),
        ("check_json", lambda d: _write(d / "f", '{"a": 1}'), {"unexpect": [{"key": ["b"], "method": "re",
                                                                            "ref": "x"}]}, {}),
        ("check_json", lambda d: _write(d / "f", '{"a": 1}'), {"unexpect": [{"key": ["b"], "method": "eq",
                                                                            "ref": None}]}, {}),
        ("check_json", lambda d: _write(d / "f", '{"a": "x"}'), {"expect": [{"key": ["a"], "method": "nope"}]}, {}),
        ("check_json", lambda d: _write(d / "f", '{"a": "3"}'), {"expect": [{"key": ["a"], "method": "approx:0.5",
                                                                            "ref": 3}]}, {}),
        ("check_json", lambda d: _write(d / "f", '{"a": 2}'), {"expect": [{"key": ["a"], "method": "range.te",
                                                                          "ref": [1, 2]}]}, {}),
        ("check_json", lambda d: _write(d / "f", '{"a": "\'x\',y"}'), {"expect": [{"key": ["a"], "method": "str_set_eq",
                                                                                  "ref": ["y", "'x'"]}]}, {}),
        ("check_json", lambda d: _write(d / "f", '{"a": 1}'), None, {}),
        ("check_json", lambda d: _write(d / "f", "a: 1\n"), {"expect": [{"key": ["a"], "method": "ge", "ref": 1}]},
         {"is_yaml": True}),
    ],
)
def test_file_metric_edges_match_osworld(oracle: Oracle, tmp_path: Path, metric: str, make_result: Maker, rules: Any,
                                         options: dict[str, Any]) -> None:
    gold = _write(tmp_path / "gold", "a\n")
    agree(oracle, metric, make_result(tmp_path), gold if rules == "gold" else rules, **options)


@pytest.mark.parametrize(
    ("tree", "rules", "options"),
    [
        (_compose("fox"), [{"xpath": "//label[@name='To']"}], {}),
        (_compose("fox"), [{"selectors": ["label[name=To]"], "text": "To", "exact": True}], {}),
        ('<a><b>Hello world</b><b>Help</b></a>', [{"xpath": "//b", "text": "Hello", "exact": False}], {}),
        ('<a><b>Hello</b></a>', [{"xpath": "//b", "text": "Hello"}], {}),
        ('<a><b/></a>', [{"xpath": "//b", "text": "", "exact": True}], {}),
        ('<a/>', [{"text": "x"}], {}),
        ('<a/>', [{"xpath": "count(//a)"}], {}),
        ("not xml", [], {}),
        (_compose("fox"), [], {"osname": "windows"}),
        (_compose("fox"), [], {"osname": "android"}),
    ],
)
def test_check_accessibility_tree_edges_match_osworld(oracle: Oracle, tree: str, rules: Any,
                                                      options: dict[str, Any]) -> None:
    agree(oracle, "check_accessibility_tree", tree, rules, **options)
