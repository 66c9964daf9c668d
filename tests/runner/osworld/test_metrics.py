"""Unit tests of the OSWorld metric functions (`services/runner/osworld/metrics`): values and files,
positive, negative, missing and malformed inputs. Their equality with OSWorld's own functions is
proven by the differential suite in `tests/oracle/`."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from services.runner.osworld import METRICS, EvalError
from services.runner.osworld.metrics import general, vscode


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


# --- metrics: values ------------------------------------------------------------------------------

DOCX = "/home/user/Data3/List3/secret.docx"
JPGS = ["a.jpg", "b.jpg"]
VALUE_CASES: list[tuple[str, Any, Any, dict[str, Any], float]] = [
    ("exact_match", "Directory exists.\n", {"expected": "Directory exists.\n"}, {}, 1.0),
    ("exact_match", "Directory exists.", {"expected": "Directory exists.\n"}, {}, 0.0),
    ("check_include_exclude", "daily update\nrepo is synchronous\n", {"include": ["daily", "synchronous"]}, {}, 1.0),
    ("check_include_exclude", "repo is not synchronous", {"include": ["synchronous"], "exclude": ["not"]}, {}, 0.0),
    ("check_include_exclude", "anything", {"include": [], "exclude": []}, {}, 1.0),
    ("check_include_exclude", "43 130", {"include": ["43 132"]}, {}, 0.0),
    ("match_in_list", "Bing", {"expected": ["Microsoft Bing", "Bing"]}, {}, 1.0),
    ("match_in_list", "Google", {"expected": ["Microsoft Bing", "Bing"]}, {}, 0.0),
    ("is_in_list", ["a.desktop", "vim.desktop"], {"expected": "vim.desktop"}, {}, 1.0),
    ("is_in_list", ["a.desktop"], {"expected": "vim.desktop"}, {}, 0.0),
    ("literal_match", "Hello", "Hello", {}, 1.0),
    ("literal_match", "Hello", "hello", {}, 0.0),
    ("literal_match", "Hello", "hello", {"ignore_case": True}, 1.0),
    ("literal_match", 3, "3", {}, 1.0),
    ("literal_match", ["A", 1], ["a", "1"], {"type": "list", "ignore_case": True}, 1.0),
    ("literal_match", ["a", "b"], ["a"], {"type": "list"}, 0.0),
    ("literal_match", "ab", ["a", "b"], {"type": "list"}, 0.0),
    ("fuzzy_match", "kitten", {"expected": "kitten"}, {}, 1.0),
    ("fuzzy_match", "abcd", {"expected": "wxyz"}, {}, 0.0),
    ("is_in_vm_clickboard", {"expected": DOCX}, f"{DOCX}\n", {}, 1.0),
    ("is_in_vm_clickboard", {"expected": DOCX}, "/home/user/secret.docx", {}, 0.0),
    ("is_in_vm_clickboard", {"expected": ["/a", "/b"]}, "/a\n/b\n", {}, 1.0),
    ("is_in_vm_clickboard", {"expected": ["/a", "/b"]}, "/a\n", {}, 0.0),
    ("check_moved_jpgs", {"children": [{"name": "b.jpg"}, {"name": "a.jpg"}]}, {"expected": JPGS}, {}, 1.0),
    ("check_moved_jpgs", {"children": [{"name": "a.jpg"}, {"name": "c.png"}]}, {"expected": JPGS}, {}, 0.0),
    ("check_moved_jpgs", {"children": [{"name": "a.jpg"}]}, {"expected": JPGS}, {}, 0.0),
]


@pytest.mark.parametrize(("name", "result", "expected", "options", "score"), VALUE_CASES)
def test_value_metrics(name: str, result: Any, expected: Any, options: dict[str, Any], score: float) -> None:
    assert METRICS[name](result, expected, **options) == score


def test_fuzzy_match_is_the_indel_ratio() -> None:
    assert general.fuzzy_match("kitten", {"expected": "sitting"}) == pytest.approx(2 * 4 / 13)
    assert 0.0 < general.fuzzy_match("hello world", {"expected": "hello wrld"}) < 1.0


RAISE_ON_MISSING_RESULT = {
    # OSWorld's own function crashes on a None result (or on this rule, which lacks its keys), so ours
    # raises EvalError there; each is pinned by the differential tests in tests/oracle/
    "check_accessibility_tree", "check_gnome_favorite_apps", "check_moved_jpgs", "check_text_enlarged",
    "compare_conference_city_in_order", "is_in_list", "is_in_vm_clickboard", "is_utc_0", "match_in_list",
    "run_sqlite3",
    "check_enabled_experiments", "check_font_size", "check_history_deleted", "compare_htmls",
    "is_added_to_steam_cart", "is_cookie_deleted", "is_shortcut_on_desktop",
    "check_global_key_play_pause", "check_one_instance_when_started_from_file", "check_qt_bgcone",
    "check_qt_max_volume", "check_qt_minimal_view", "check_qt_slider_colours", "is_vlc_playing",
    "is_vlc_recordings_folder", "is_extension_installed",
    "check_auto_saving_time", "check_image_stretch_and_center", "check_left_panel", "check_page_number_colors",
    "check_transition", "compare_pptx_files", "evaluate_presentation_fill_to_rgb_distance", "find_default_font",
    # the expected state is a path, not rules: these get one that is not a path here
    "compare_videos", "check_python_file_by_test_suite",
}


@pytest.mark.parametrize("name", sorted(METRICS))
def test_every_metric_scores_a_missing_result_zero_or_raises_an_eval_error(name: str) -> None:
    """A None getter value (a file missing in the env) scores 0.0 where OSWorld's function does, and
    is an EvalError where it crashes: never another exception."""
    metric = METRICS[name]
    positional = [p for p in inspect.signature(metric).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    # evaluators of one-argument metrics (check_triangle_position, ...) have no `expected`
    args: list[Any] = [None] if len(positional) == 1 else [None, {"expected": "x", "include": ["x"]}]
    if name in RAISE_ON_MISSING_RESULT:
        with pytest.raises(EvalError):
            metric(*args)
    else:
        assert metric(*args) == 0.0


@pytest.mark.parametrize("name", ["exact_match", "match_in_list", "is_in_list", "fuzzy_match"])
def test_rules_without_expected_are_an_eval_error(name: str) -> None:
    with pytest.raises(EvalError, match=name):
        METRICS[name]("x", {"include": ["x"]})


def test_file_contains_without_expected_scores_zero_as_osworld(tmp_path: Path) -> None:
    assert general.file_contains(write(tmp_path / "f.txt", "x"), {"include": ["x"]}) == 0.0


@pytest.mark.parametrize(("name", "args"), [
    ("is_in_list", (None, {"expected": "x"})),
    ("check_moved_jpgs", ({"name": "cpjpg"}, {"expected": []})),
    ("check_moved_jpgs", (None, {"expected": []})),
    ("is_in_vm_clickboard", ({"expected": "x"}, None)),
    ("check_gnome_favorite_apps", ("@as []", {"expected": []})),
    ("is_utc_0", ("Time zone: UTC",)),
    ("check_include_exclude", (42, {"include": ["4"]})),
])
def test_values_osworld_crashes_on_are_eval_errors_naming_the_metric(name: str, args: tuple[Any, ...]) -> None:
    with pytest.raises(EvalError, match=name):
        METRICS[name](*args)


def test_literal_match_rejects_unknown_type() -> None:
    with pytest.raises(EvalError, match="literal_match"):
        general.literal_match("a", "a", type="dict")


# --- metrics: files ---------------------------------------------------------------------------------


def test_compare_text_file(tmp_path: Path) -> None:
    gold = write(tmp_path / "gold.txt", "Hello World\nline two\n")
    assert vscode.compare_text_file(write(tmp_path / "same.txt", "Hello World\nline two\n"), gold) == 1.0
    spaced = write(tmp_path / "spaced.txt", "  hello   world\n\tline two")
    assert vscode.compare_text_file(spaced, gold) == 0.0
    assert vscode.compare_text_file(spaced, gold, ignore_blanks=True) == 0.0
    assert vscode.compare_text_file(spaced, gold, ignore_blanks=True, ignore_case=True) == 1.0
    with pytest.raises(EvalError, match="compare_text_file"):  # OSWorld's open() raises on it too
        vscode.compare_text_file(str(tmp_path / "absent.txt"), gold)
    assert vscode.compare_text_file(None, gold) == 0.0


def test_diff_text_file_is_a_line_ratio(tmp_path: Path) -> None:
    gold = write(tmp_path / "gold.txt", "a\nb\nc\nd\n")
    assert general.diff_text_file(write(tmp_path / "same.txt", "a\nb\nc\nd\n"), gold) == 1.0
    assert general.diff_text_file(write(tmp_path / "half.txt", "a\nb\nx\ny\n"), gold) == pytest.approx(0.5)
    assert general.diff_text_file(write(tmp_path / "none.txt", "w\nx\ny\nz\n"), gold) == 0.0
    assert general.diff_text_file(None, gold) == 0.0
    with pytest.raises(EvalError, match="diff_text_file"):  # OSWorld opens it unguarded
        general.diff_text_file(str(tmp_path / "absent"), gold)


def test_file_contains(tmp_path: Path) -> None:
    path = write(tmp_path / "notes.txt", "alpha\nbeta gamma\n")
    assert general.file_contains(path, {"expected": ["alpha", "beta g"]}) == 1.0
    assert general.file_contains(path, {"expected": ["alpha", "delta"]}) == 0.0
    assert general.file_contains(str(tmp_path / "absent"), {"expected": []}) == 0.0


def test_check_list(tmp_path: Path) -> None:
    path = write(tmp_path / "list.txt", "apple 3\nbanana 5\ncherry\n")
    assert general.check_list(path, {"expect": [r"^apple \d$", "ban"], "unexpect": ["durian"]}) == 1.0
    assert general.check_list(path, {"expect": ["durian"]}) == 0.0
    assert general.check_list(path, {"expect": ["apple"], "unexpect": ["^cher"]}) == 0.0
    with pytest.raises(EvalError, match="check_list"):
        general.check_list(path, {"expect": ["(unclosed"]})


def test_check_json(tmp_path: Path) -> None:
    path = write(tmp_path / "settings.json", '{"editor": {"fontSize": 14, "theme": "Dark+"}, "files": ["a", "b"]}')
    rules = {
        "expect": [
            {"key": ["editor", "fontSize"], "method": "eq", "ref": 14},
            {"key": ["editor", "theme"], "method": "re.I", "ref": "^dark"},
            {"key": ["editor", "fontSize"], "method": "range.ee", "ref": [10, 14]},
            {"key": ["editor", "fontSize"], "method": "approx:0.5", "ref": 14.2},
            {"key": ["files", 1], "method": "eq", "ref": "b"},
        ],
        "unexpect": [{"key": ["editor", "wordWrap"], "method": "eq", "ref": "on"}],
    }
    assert general.check_json(path, rules) == 1.0
    assert general.check_json(path, {"expect": [{"key": ["editor", "fontSize"], "method": "gt", "ref": 14}]}) == 0.0
    assert general.check_json(path, {"expect": [{"key": ["editor", "missing"], "method": "eq", "ref": 1}]}) == 0.0
    assert general.check_json(path, {"unexpect": [{"key": ["editor", "theme"], "method": "ne", "ref": "Light"}]}) == 0.0
    assert general.check_json(write(tmp_path / "bad.json", "{not json"), rules) == 0.0
    # OSWorld catches every error applying a rule (an unknown method too): 0
    assert general.check_json(path, {"expect": [{"key": ["editor"], "method": "nope", "ref": 1}]}) == 0.0
    assert general.check_json(path, {"expect": [{"key": ["editor"], "method": "spreadsheet_range", "ref": []}]}) == 0.0


def test_check_json_reads_yaml(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = write(tmp_path / "c.yaml", "server:\n  port: 8080\n  hosts: a,b\n")
    rules = {
        "expect": [
            {"key": ["server", "port"], "method": "eq", "ref": 8080},
            {"key": ["server", "hosts"], "method": "str_set_eq", "ref": ["b", "a"]},
        ]
    }
    assert general.check_json(path, rules, is_yaml=True) == 1.0
    port_rule = {"expect": [{"key": ["server", "port"], "method": "lt", "ref": 80}]}
    assert general.check_json(path, port_rule, is_yaml=True) == 0.0


def test_check_line_number_counts_lines_with_a_time_of_day(tmp_path: Path) -> None:
    path = write(tmp_path / "log.txt", "12:00:01 start\nno time here\n23:59:60 leap\n24:00:00 not a time\n")
    assert general.check_line_number(path, {"expected": 2}) == 1.0
    assert general.check_line_number(path, {"expected": "2"}) == 1.0
    assert general.check_line_number(path, {"expected": 3}) == 0.0
    assert general.check_line_number(str(tmp_path / "absent"), {"expected": 0}) == 0.0


