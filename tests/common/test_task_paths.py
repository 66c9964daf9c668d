"""Task fields naming a runner file (common/task_paths.py): what is refused as written, confinement with
symlinks resolved, and the task model's errors naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from common.task import OSWorldTask
from common.task_paths import inside, path_problem


@pytest.mark.parametrize(("name", "problem"), [
    ("a.txt", None), ("dir/a.txt", None), ("a..b", None), ("./a", None),
    ("", "non-empty"), ("  ", "non-empty"), (None, "non-empty"), ("/etc/passwd", "absolute"),
    ("\\\\server\\share", "absolute"), ("C:\\x", "absolute"), ("..", "climbs"), ("a/../../b", "climbs"),
    ("a\\..\\..\\b", "climbs"), ("a\x00b", "NUL"),
])
def test_path_problem(name: object, problem: str | None) -> None:
    found = path_problem(name)
    assert (found is None) if problem is None else (found is not None and problem in found), found


def test_inside_follows_symlinks_and_refuses_what_leads_out(tmp_path: Path) -> None:
    root, outside = tmp_path / "cache", tmp_path / "secret.txt"
    (root / "sub").mkdir(parents=True)
    outside.write_text("s")
    (root / "sub" / "ok.txt").write_text("ok")
    (root / "out").symlink_to(outside)
    (root / "in").symlink_to(root / "sub" / "ok.txt")
    assert inside(root, "sub/ok.txt") == (root / "sub" / "ok.txt").resolve()
    assert inside(root, "in") == (root / "sub" / "ok.txt").resolve()
    assert inside(root, "out") is None and inside(root, "../secret.txt") is None and inside(root, str(outside)) is None


def _task(**fields: object) -> dict[str, object]:
    return {"id": "t", "instruction": "x", "evaluator": {"func": "infeasible"}, **fields}


def test_the_task_model_names_the_field() -> None:
    upload = {"type": "upload_file", "parameters": {"files": [{"local_path": "ok", "path": "/a"},
                                                              {"local_path": "/root/.env", "path": "/b"}]}}
    with pytest.raises(ValidationError, match=r"files\[1\]\.local_path '/root/.env' is an absolute path") as caught:
        OSWorldTask.model_validate(_task(config=[upload]))
    assert caught.value.errors()[0]["loc"] == ("config", 0)
    evaluator = {"func": ["a", "b"], "result": [{"type": "rule", "rules": 1}, {"type": "cache_file", "path": "../x"}]}
    with pytest.raises(ValidationError, match=r"result\[1\]\.path '\.\./x' \(cache_file\) climbs out"):
        OSWorldTask.model_validate(_task(evaluator=evaluator))
    postconfig = {"func": "infeasible", "postconfig": [upload]}
    with pytest.raises(ValidationError, match="postconfig"):
        OSWorldTask.model_validate(_task(evaluator=postconfig))
    assert OSWorldTask.model_validate(_task(config=[{"type": "upload_file", "parameters": {"files": [
        {"local_path": "fixtures/a.txt", "path": "/home/user/a.txt"}]}}]))
