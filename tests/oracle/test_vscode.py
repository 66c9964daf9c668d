"""Differential tests: our VS Code metrics (`services/runner/osworld/metrics/vscode/`) against OSWorld's
own (`desktop_env/evaluators/metrics/vscode.py`), on fixtures built for every task of
`test_nogdrive.json` that uses one (VS Code settings / keybindings as VS Code writes them, program
outputs, small Python games with their test suites, zip archives with a PDF), plus edge cases.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics import METRICS
from services.runner.osworld.metrics.vscode import test_suite as suite_metric
from tests.oracle.client import Oracle
from tests.oracle.differential import RAISES, Builder, Case, check_case
from tests.oracle.osworld_index import MetricUse, metric_uses

VSCODE_METRICS = ("compare_text_file", "check_json_settings", "is_extension_installed", "compare_config",
                  "check_json_keybindings", "check_python_file_by_test_suite", "compare_result_files",
                  "compare_zip_files")


def check(oracle: Oracle, metric: str, case: Case, options: dict[str, Any] | None = None) -> Any:
    return check_case(oracle, "vscode", metric, case, options)


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


# --- compare_text_file ------------------------------------------------------------------------------

CALCULATOR_LOG = "2 + 3 = 5\n10 - 4 = 6\n6 * 7 = 42\n8 / 2 = 4.0\n"
CLONE_LOG = "Cloning into 'instructor-embedding'...\n"
BIB = """@inproceedings{DBLP:conf/acl/SuSKWHOYSZ023,
  author       = {Hongjin Su and Weijia Shi},
  title        = {One Embedder, Any Task: Instruction-Finetuned Text Embeddings},
  booktitle    = {Findings of {ACL} 2023},
  year         = {2023}
}

@article{DBLP:journals/corr/abs-2201-11903,
  author       = {Jason Wei},
  title        = {Chain of Thought Prompting Elicits Reasoning in Large Language Models},
  year         = {2022}
}
"""
REPLACE_TEXT = "This is a test.\nThe test file has test lines.\nA test, another test.\n"
INDENTED = "def f(x):\n" + "".join(f"\t    y{i} = x + {i}\n" for i in range(2, 11)) + "    return x\n"

TEXT_TASKS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    # task id prefix: (gold, right answer, [(label, wrong answer)])
    "f918266a": (CALCULATOR_LOG, CALCULATOR_LOG, [("code left incomplete", "2 + 3 = 5\n10 - 4 = 6\n")]),
    "acb0f96b": (CLONE_LOG, CLONE_LOG, [("clone failed", "fatal: destination path already exists\n")]),
    "20236825": ("[11, 12, 22, 25, 34, 64, 90]\n", "[11, 12, 22, 25, 34, 64, 90]\n",
                 [("not sorted", "[64, 34, 25, 12, 22, 11, 90]\n"), ("no newline", "[11, 12, 22, 25, 34, 64, 90]")]),
    "df67aebb": (BIB, BIB.replace("\n\n", "\n\n\n").replace("  author", "\tauthor"),
                 [("arXiv version kept", BIB.replace("Findings of {ACL} 2023", "CoRR"))]),
    "0ed39f63": (REPLACE_TEXT, REPLACE_TEXT, [("not replaced", REPLACE_TEXT.replace("test", "text"))]),
    "ec71221e": (INDENTED, INDENTED, [("spaces instead of a tab", INDENTED.replace("\t", "    "))]),
}


def text_files(tmp: Path, use: MetricUse) -> list[Case]:
    gold_text, right, wrongs = TEXT_TASKS[use.task.split("/")[1][:8]]
    gold = write(tmp / "gold.txt", gold_text)
    cases = [Case("right output", write(tmp / "out.txt", right), gold), Case("not saved", None, gold, 0.0)]
    for index, (label, wrong) in enumerate(wrongs):
        cases.append(Case(label, write(tmp / f"wrong{index}.txt", wrong), gold, 0.0))
    return cases


# --- settings, keybindings, extensions, config ---------------------------------------------------------

SETTINGS_BEFORE = {"workbench.colorTheme": "Default Dark Modern", "editor.fontSize": 14}


def _settings(tmp: Path, name: str, settings: dict[str, Any]) -> str:
    return write(tmp / name, json.dumps(settings, indent=4))


def json_settings(tmp: Path, use: MetricUse) -> list[Case]:
    expected = use.rules
    wanted = expected["expected"]
    if "folders" in wanted:  # the workspace file after adding two folders
        right = {"folders": [{"path": "project"}, {"path": "data1"}, {"path": "data2"}], "settings": {}}
        wrong = {"folders": [{"path": "project"}, {"path": "data1"}], "settings": {}}
        return [Case("both folders added", _settings(tmp, "w.code-workspace", right), expected),
                Case("one folder added", _settings(tmp, "w1.code-workspace", wrong), expected, 0.0),
                Case("no workspace saved", None, expected, 0.0)]
    changed = {**SETTINGS_BEFORE, **wanted}
    other_value = {key: (not value if isinstance(value, bool) else {"changed": value}) for key, value in wanted.items()}
    with_comment = tmp / "commented.json"
    with_comment.write_text("{\n    // my settings\n" + json.dumps(changed)[1:])
    return [Case("setting saved", _settings(tmp, "settings.json", changed), expected),
            Case("settings untouched", _settings(tmp, "before.json", SETTINGS_BEFORE), expected, 0.0),
            Case("another value", _settings(tmp, "other.json", {**SETTINGS_BEFORE, **other_value}), expected, 0.0),
            Case("settings with a comment (JSONC)", str(with_comment), expected, 0.0)]


KEYBINDINGS_HEAD = "// Place your key bindings in this file to override the defaultsauto[]\n"


def keybindings(tmp: Path, use: MetricUse) -> list[Case]:
    expected = use.rules
    binding = expected["expected"]
    other = {"key": "ctrl+shift+j", "command": "workbench.action.togglePanel"}
    right = KEYBINDINGS_HEAD + json.dumps([other, binding], indent=4)
    wrong_when = KEYBINDINGS_HEAD + json.dumps([other, {**binding, "when": "editorFocus"}], indent=4)
    with_comment = KEYBINDINGS_HEAD + "[\n    // added\n" + json.dumps([binding])[1:]
    return [Case("binding added", write(tmp / "keybindings.json", right), expected),
            Case("plain JSON list", write(tmp / "plain.json", json.dumps([binding])), expected),
            Case("another when clause", write(tmp / "when.json", wrong_when), expected, 0.0),
            Case("comment inside the list", write(tmp / "commented.json", with_comment), expected, 0.0),
            Case("no keybindings file", None, expected, 0.0)]


def extensions(tmp: Path, use: MetricUse) -> list[Case]:
    rules = use.rules
    name = rules["expected"]
    return [Case("listed", f"ms-toolsai.jupyter\n{name}\nms-python.vscode-pylance\n", rules),
            Case("not listed", "ms-toolsai.jupyter\nms-python.vscode-pylance\n", rules, 0.0),
            Case("empty output", "", rules, 0.0)]


def config_text(tmp: Path, use: MetricUse) -> list[Case]:
    rules = use.rules
    expected = rules["expected"]
    if expected == "project":  # OpenProject.txt written by OSWorld's VS Code extension command
        return [Case("project folder open", write(tmp / "OpenProject.txt", "project"), rules),
                Case("another folder open", write(tmp / "other.txt", "Desktop"), rules, 0.0),
                Case("with a newline", write(tmp / "newline.txt", "project\n"), rules, 0.0),
                Case("command wrote nothing", None, rules, 0.0)]
    pretty = json.dumps(json.loads(expected), indent=4)
    return [Case("exactly the expected text", write(tmp / "settings.json", expected), rules),
            Case("same setting, VS Code's indentation", write(tmp / "pretty.json", pretty), rules, 0.0),
            Case("another theme", write(tmp / "other.json", expected.replace("Dark", "Light")), rules, 0.0)]


# --- programs: test suites, result files, zip archives ------------------------------------------------

SNAKE_SETTINGS = "BLOCK = 20\nWIDTH, HEIGHT = 400, 400\n"
SNAKE_FOOD = """import pygame
from settings import BLOCK


class Food:
    def __init__(self, x=200, y=200):
        self.rect = pygame.Rect(x, y, BLOCK, BLOCK)
"""
SNAKE = """import pygame
from settings import BLOCK


class Snake:
    def __init__(self):
        self.body = [pygame.Rect(100, 100, BLOCK, BLOCK)]
        self.direction = (1, 0)

    def move(self):
        head = self.body[0].move(self.direction[0] * BLOCK, self.direction[1] * BLOCK)
        self.body = [head] + self.body[:-1]

    def can_eat(self, food):
        return {test}
"""
SNAKE_MAIN = """import pygame
from food import Food
from snake import Snake

if __name__ == "__main__":
    pygame.init()
"""
SNAKE_TEST = """from food import Food
from snake import Snake


def test():
    snake = Snake()
    food = Food(120, 100)
    snake.move()
    return snake.can_eat(food)
"""
TETRIS_BLOCK = """SHAPES = {"I": [(0, 0), (0, 1), (0, 2), (0, 3)], "O": [(0, 0), (1, 0), (0, 1), (1, 1)]}


class Block:
    def __init__(self, shape, x=0, y=0):
        self.cells, self.x, self.y = list(SHAPES[shape]), x, y
"""
TETRIS = """from settings import COLUMNS


class Tetris:
    def __init__(self):
        self.grid = [[0] * COLUMNS for _ in range(20)]

    def rotate(self, block):
        rotated = [(y, x) for x, y in block.cells]
        for x, y in rotated:
            column = block.x + x
            {guard}
            self.grid[block.y + y][column]
        block.cells = rotated
        return block
"""
TETRIS_TEST = """from block import Block
from tetris import Tetris


def test():
    game = Tetris()
    try:
        game.rotate(Block("I", x=8, y=5))
    except Exception:
        return False
    return True
"""


def _game(folder: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        write(folder / name, text)
    return str(folder / "test_suite.py")


def suites(tmp: Path, use: MetricUse) -> list[Case]:
    """The agent's files and the task's test file land in one work dir (vm_file + cloud_file); the
    metric gets the first result file (OSWorld's `gives` default) and the test file."""
    if "snake" in json.dumps(use.result):
        common = {"settings.py": SNAKE_SETTINGS, "food.py": SNAKE_FOOD, "main.py": SNAKE_MAIN,
                  "test_suite.py": SNAKE_TEST}
        eats = SNAKE.replace("{test}", "self.body[0].colliderect(food.rect)")
        misses = SNAKE.replace("{test}", "self.body[0].topleft == food.rect.center")
        fixed = _game(tmp / "fixed", {**common, "snake.py": eats})
        buggy = _game(tmp / "buggy", {**common, "snake.py": misses})
        broken = _game(tmp / "broken", {**common, "snake.py": "import pygame\nclass Snake(\n"})
        return [Case("food eaten", str(tmp / "fixed" / "food.py"), fixed),
                Case("still not eating", str(tmp / "buggy" / "food.py"), buggy, 0.0),
                Case("syntax error left", str(tmp / "broken" / "food.py"), broken, 0.0)]
    common = {"settings.py": "COLUMNS = 10\n", "block.py": TETRIS_BLOCK, "main.py": "import tetris\n",
              "test_suite.py": TETRIS_TEST}
    fixed = _game(tmp / "fixed", {**common, "tetris.py": TETRIS.replace(
        "{guard}", "if not 0 <= column < len(self.grid[0]):\n                return block")})
    buggy = _game(tmp / "buggy", {**common, "tetris.py": TETRIS.replace("{guard}", "pass")})
    return [Case("rotation fixed", str(tmp / "fixed" / "block.py"), fixed),
            Case("rotation still crashes", str(tmp / "buggy" / "block.py"), buggy, 0.0),
            Case("no test file", str(tmp / "fixed" / "block.py"), None, 0.0)]


def result_files(tmp: Path, use: MetricUse) -> list[Case]:
    gold = write(tmp / "result_gold.txt", "25.5\n")
    return [Case("the number", write(tmp / "result.txt", "25.5"), gold),
            Case("a sentence with the number", write(tmp / "sentence.txt", "The median price is 25.5\n"), gold),
            Case("within 1e-4", write(tmp / "close.txt", "25.50004"), gold),
            Case("another number", write(tmp / "wrong.txt", "26.0"), gold, 0.0),
            Case("not a number", write(tmp / "text.txt", "unknown"), gold, 0.0),
            Case("not saved", None, gold, 0.0)]


def pdf(lines: list[str], producer: str = "cua-rollout tests") -> bytes:
    """A one-page PDF showing `lines` in Helvetica (hand-written objects; `producer` changes bytes
    without changing text)."""
    stream = "BT /F1 12 Tf 72 720 Td " + " ".join(f"({line}) Tj 0 -16 Td" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Producer ({producer}) >>",
    ]
    out = "%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n" + "".join(f"{o:010d} 00000 n \n" for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out.encode("latin-1")


ESSAY = ["Recruitment and retention of health professionals across Europe",
         "Health workforce shortages are a growing concern.", "Retention policies differ by country."]


def _zip(path: Path, members: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return str(path)


def zip_files(tmp: Path, use: MetricUse) -> list[Case]:
    """The essay submission: the docx and its PDF export in a zip."""
    docx = b"PK-docx-bytes-of-the-essay"
    name = "Recruitment_and_retention_of_health_professionals_across_Europe"
    gold = _zip(tmp / "gold.zip", {f"{name}.docx": docx, f"{name}.pdf": pdf(ESSAY)})
    return [
        Case("docx and its PDF export", _zip(tmp / "ok.zip", {f"{name}.docx": docx,
                                                               f"{name}.pdf": pdf(ESSAY, "LibreOffice 7.6")}), gold),
        Case("PDF missing", _zip(tmp / "nopdf.zip", {f"{name}.docx": docx}), gold, 0.0),
        Case("PDF of another text", _zip(tmp / "other.zip", {f"{name}.docx": docx,
                                                              f"{name}.pdf": pdf(["A different essay."])}), gold, 0.0),
        Case("docx changed", _zip(tmp / "docx.zip", {f"{name}.docx": docx + b"!", f"{name}.pdf": pdf(ESSAY)}), gold,
             0.0),
        Case("no archive", None, gold, 0.0),
    ]


BUILDERS: dict[str, Builder] = {
    "compare_text_file": text_files,
    "check_json_settings": json_settings,
    "is_extension_installed": extensions,
    "compare_config": config_text,
    "check_json_keybindings": keybindings,
    "check_python_file_by_test_suite": suites,
    "compare_result_files": result_files,
    "compare_zip_files": zip_files,
}
USES = [(metric, use) for metric in VSCODE_METRICS for use in metric_uses(metric)]


def test_every_vscode_metric_use_has_fixtures() -> None:
    assert set(BUILDERS) == set(VSCODE_METRICS)
    assert {metric for metric, _ in USES} == set(VSCODE_METRICS)


@pytest.mark.parametrize(("metric", "use"), USES, ids=[f"{m}:{u.id}" for m, u in USES])
def test_task_fixtures(oracle: Oracle, tmp_path: Path, metric: str, use: MetricUse) -> None:
    for case in BUILDERS[metric](tmp_path, use):
        if metric != "check_python_file_by_test_suite":
            check(oracle, metric, case, use.options)
            continue
        fresh = Oracle()  # OSWorld imports the game modules in-process: each case needs a clean process
        try:
            check(fresh, metric, case, use.options)
        finally:
            fresh.close()


def test_suite_modules_do_not_leak_into_the_next_evaluation(oracle: Oracle, tmp_path: Path) -> None:
    """Deliberate difference (xlang-ai/OSWorld PR #486): in one process, OSWorld's metric keeps the
    fixed game's `snake` module cached, so the buggy game's suite then passes; ours runs each suite
    in its own process."""
    (use,) = [u for u in metric_uses("check_python_file_by_test_suite") if "snake" in json.dumps(u.result)]
    fixed, buggy = suites(tmp_path, use)[:2]
    process = Oracle()
    try:
        assert process.call("metrics.vscode", "check_python_file_by_test_suite", *fixed.args()).value == 1.0
        assert process.call("metrics.vscode", "check_python_file_by_test_suite", *buggy.args()).value == 1.0
    finally:
        process.close()
    assert METRICS["check_python_file_by_test_suite"](*fixed.args()) == 1.0
    assert METRICS["check_python_file_by_test_suite"](*buggy.args()) == 0.0


def test_edge_cases(oracle: Oracle, tmp_path: Path) -> None:
    text = write(tmp_path / "a.txt", "Hello\tWorld \n")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b"caf\xe9\n")
    missing = str(tmp_path / "missing.txt")
    cases = {
        "compare_text_file": [
            Case("expected file missing", text, missing, RAISES), Case("no expected", text, None, RAISES),
            Case("not UTF-8", str(latin1), text, RAISES),
            Case("blanks and case ignored", write(tmp_path / "b.txt", "hello world"), text, 1.0,
                 options={"ignore_blanks": True, "ignore_case": True}),
            Case("case differs", write(tmp_path / "c.txt", "hello\tworld \n"), text, 0.0)],
        "compare_config": [Case("file missing", missing, {"expected": "x"}, RAISES),
                           Case("rules without expected", text, {}, RAISES)],
        "check_json_settings": [Case("expected without its key", _settings(tmp_path, "s.json", {}), {}, RAISES),
                                Case("JSON null", write(tmp_path / "null.json", "null"), {"expected": {"a": 1}},
                                     RAISES),
                                Case("JSON list", write(tmp_path / "list.json", '["a"]'), {"expected": {"a": 1}},
                                     RAISES)],
        "check_json_keybindings": [Case("expected without its key", write(tmp_path / "k.json", "[]"), {}, RAISES),
                                   Case("an object, not a list", write(tmp_path / "o.json", "{}"),
                                        {"expected": {}}, 0.0)],
        "is_extension_installed": [Case("command failed", None, {"type": "contain", "expected": "x"}, RAISES),
                                   Case("not_contain", "a.b\n", {"type": "not_contain", "expected": "x"}, 1.0),
                                   Case("unknown rule type", "a.b\n", {"type": "equal", "expected": "a.b"}, RAISES)],
        "compare_result_files": [Case("gold missing", text, missing, RAISES),
                                 Case("text equal", write(tmp_path / "t1.txt", "abc"), write(tmp_path / "t2.txt",
                                                                                             "abc\n"), 1.0)],
        "compare_zip_files": [Case("not a zip", text, text, RAISES),
                              Case("gold missing", _zip(tmp_path / "z.zip", {}), missing, RAISES),
                              Case("corrupt PDF member", _zip(tmp_path / "p1.zip", {"a.pdf": b"%PDF-1.4 broken"}),
                                   _zip(tmp_path / "p2.zip", {"a.pdf": pdf(ESSAY)}), RAISES)],
    }
    for metric, metric_cases in cases.items():
        for case in metric_cases:
            check(oracle, metric, case)


def test_suite_options_and_failures(oracle: Oracle, tmp_path: Path) -> None:
    suite = write(tmp_path / "suite" / "checks.py", """import json
from pathlib import Path

def test():
    return 0.25

def check_cwd():
    return Path("data.json").exists() and json.loads(Path("data.json").read_text())["ok"]

def returns_text():
    return "yes"

def raises():
    raise ValueError("bad")

value = 3
""")
    write(tmp_path / "suite" / "data.json", '{"ok": true}')
    for name, want in (("test", 0.25), ("check_cwd", 1.0), ("returns_text", 1.0), ("raises", 0.0), ("value", 0.0),
                       ("missing", 0.0)):
        check(oracle, "check_python_file_by_test_suite",
              Case(name, None, suite, want, options={"test_function_name": name}))
    check(oracle, "check_python_file_by_test_suite", Case("test file is a folder", None, str(tmp_path), 0.0))
    check(oracle, "check_python_file_by_test_suite", Case("test file is not a path", None, {"x": 1}, RAISES))


def test_suite_that_exits_or_hangs_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliberate differences (not compared: they would stop or hang OSWorld's own process): a test
    that exits the interpreter, or runs past the timeout, raises EvalError."""
    exits = write(tmp_path / "exits.py", "import sys\n\ndef test():\n    sys.exit(2)\n")
    with pytest.raises(EvalError, match="SystemExit 2"):
        suite_metric.check_python_file_by_test_suite(None, exits)
    hangs = write(tmp_path / "hangs.py", "import time\n\ndef test():\n    time.sleep(60)\n")
    monkeypatch.setattr(suite_metric, "SUITE_TIMEOUT_S", 1.0)
    with pytest.raises(EvalError, match="did not finish within 1 s"):
        suite_metric.check_python_file_by_test_suite(None, hangs)
    crashes = write(tmp_path / "crashes.py", "import os\n\ndef test():\n    os._exit(3)\n")
    with pytest.raises(EvalError, match="exit code 3"):
        suite_metric.check_python_file_by_test_suite(None, crashes)
