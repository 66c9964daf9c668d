"""Unit tests of the OSWorld getters (`services/runner/osworld/getters`) against the `FakeEnv` test
double: what each reads from the env and gives back, bad configs, transport errors. Their equality
with OSWorld's own getters is proven by `tests/oracle/test_getters.py`."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from common import url_cache
from services.runner.osworld import EvalError, get_state
from tests.runner.osworld.test_evaluate import eval_ctx, write
from tests.runner.osworld.test_setup import URL, FakeEnv, FakeResult, TransportDown

# --- getters -----------------------------------------------------------------------------------


def test_vm_command_line_returns_stdout_of_execute_verbatim(tmp_path: Path) -> None:
    env = FakeEnv(reply=lambda c, s: FakeResult(output="Directory exists.\n", error="warn", returncode=3))
    config = {"type": "vm_command_line", "command": "echo {CLIENT_PASSWORD} | sudo -S ls", "shell": "true"}
    assert get_state(env, config, eval_ctx(tmp_path)) == "Directory exists.\n"
    # OSWorld's getter sends the command as written: no placeholder substitution at scoring time
    assert env.calls == [("execute", ("echo {CLIENT_PASSWORD} | sudo -S ls",), {"shell": True})]


def test_vm_command_error_returns_stderr(tmp_path: Path) -> None:
    env = FakeEnv(reply=lambda c, s: FakeResult(output="o", error="No such file\n", returncode=2))
    assert get_state(env, {"type": "vm_command_error", "command": ["ls", "/x"]}, eval_ctx(tmp_path)) == "No such file\n"
    assert env.calls == [("execute", (["ls", "/x"],), {"shell": False})]


@pytest.mark.parametrize("kind", ["vm_command_line", "vm_command_error"])
def test_command_getters_give_none_on_a_server_error_status(tmp_path: Path, kind: str) -> None:
    env = FakeEnv(reply=lambda c, s: FakeResult(status="error", output="", error="timeout"))
    assert get_state(env, {"type": kind, "command": "sleep 999"}, eval_ctx(tmp_path)) is None


def test_vm_file_copies_into_the_work_dir(tmp_path: Path) -> None:
    env = FakeEnv(files={"/home/user/out.txt": b"hello"})
    ctx = eval_ctx(tmp_path)
    path = get_state(env, {"type": "vm_file", "path": "/home/user/out.txt", "dest": "out.txt"}, ctx)
    assert path == str(tmp_path / "work" / "out.txt")
    assert Path(path).read_bytes() == b"hello"
    # a dest with directories cannot escape the work dir
    escaped = get_state(env, {"type": "vm_file", "path": "/home/user/out.txt", "dest": "../../evil.txt"}, ctx)
    assert escaped == str(tmp_path / "work" / "evil.txt")


def test_vm_file_missing_in_the_env_gives_none(tmp_path: Path) -> None:
    assert get_state(FakeEnv(), {"type": "vm_file", "path": "/nope", "dest": "n"}, eval_ctx(tmp_path)) is None


def test_vm_file_multi_and_gives(tmp_path: Path) -> None:
    env = FakeEnv(files={"/a": b"A", "/b": b"B"})
    ctx = eval_ctx(tmp_path)
    both = {"type": "vm_file", "multi": True, "path": ["/a", "/b", "/c"], "dest": ["a", "b", "c"], "gives": [0, 1, 2]}
    assert get_state(env, both, ctx) == [str(tmp_path / "work" / "a"), str(tmp_path / "work" / "b"), None]
    second = {**both, "gives": [1]}
    assert get_state(env, second, ctx) == str(tmp_path / "work" / "b")
    default = {key: value for key, value in both.items() if key != "gives"}
    assert get_state(env, default, ctx) == str(tmp_path / "work" / "a")  # gives defaults to [0]
    assert [args[0] for args, _ in env.named("get_file")] == ["/a", "/b", "/c"] * 3


@pytest.mark.parametrize(
    "config",
    [
        {"type": "vm_file", "path": "/a"},
        {"type": "vm_file", "multi": True, "path": ["/a"], "dest": ["a", "b"]},
        {"type": "vm_file", "path": "/a", "dest": "a", "gives": [3]},
    ],
)
def test_vm_file_rejects_bad_config(tmp_path: Path, config: dict[str, Any]) -> None:
    with pytest.raises(EvalError, match="vm_file"):
        get_state(FakeEnv(), config, eval_ctx(tmp_path))


def test_file_getters_need_a_work_dir(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="work dir"):
        get_state(FakeEnv(files={"/a": b""}), {"type": "vm_file", "path": "/a", "dest": "a"}, eval_ctx(tmp_path, False))


def test_vm_terminal_output_list_directory_rule_and_screen_size(tmp_path: Path) -> None:
    tree = {"name": "cpjpg", "type": "directory", "children": [{"name": "a.jpg", "type": "file"}]}
    env = FakeEnv(terminal_text="$ stty size\n43 132\n", tree=tree, screen=(1280, 720))
    ctx = eval_ctx(tmp_path)
    assert get_state(env, {"type": "vm_terminal_output"}, ctx) == "$ stty size\n43 132\n"
    assert get_state(env, {"type": "list_directory", "path": "/home/user/cpjpg"}, ctx) == tree
    assert get_state(env, {"type": "rule", "rules": {"include": ["x"]}}, ctx) == {"include": ["x"]}
    assert get_state(env, {"type": "vm_screen_size"}, ctx) == {"width": 1280, "height": 720}
    assert [name for name, _, _ in env.calls] == ["terminal", "list_directory", "screen_size"]
    assert env.named("list_directory") == [(("/home/user/cpjpg",), {})]


def test_cache_file_looks_in_the_work_dir_then_the_cache_dir(tmp_path: Path) -> None:
    ctx = eval_ctx(tmp_path)
    write(tmp_path / "cache" / "gold" / "expected.txt", "gold")
    copied = get_state(FakeEnv(), {"type": "cache_file", "path": "gold/expected.txt"}, ctx)
    assert copied == str(tmp_path / "work" / "cache_file" / "gold" / "expected.txt")  # copied into the work dir
    assert Path(copied).read_text() == "gold"
    captured = write(tmp_path / "work" / "gold" / "expected.txt", "captured")
    assert get_state(FakeEnv(), {"type": "cache_file", "path": "gold/expected.txt"}, ctx) == captured
    with pytest.raises(EvalError, match="missing.txt"):
        get_state(FakeEnv(), {"type": "cache_file", "path": "missing.txt"}, ctx)


@pytest.mark.parametrize(("path", "problem"), [
    ("/etc/passwd", "is an absolute path"), ("../../proc/self/environ", "climbs out"),
    ("gold/../../x", "climbs out"), ("leak", "'leak' not found"),
])
def test_cache_file_never_names_a_runner_file(tmp_path: Path, path: str, problem: str) -> None:
    ctx = eval_ctx(tmp_path)
    secret = write(tmp_path / "runner.env", "SECRET=1")
    (tmp_path / "cache").mkdir(exist_ok=True)
    (tmp_path / "cache" / "leak").symlink_to(secret)  # a symlink out of the cache is not followed
    with pytest.raises(EvalError, match=problem):
        get_state(FakeEnv(), {"type": "cache_file", "path": path}, ctx)


def test_file_getters_refuse_a_dest_without_a_file_name(tmp_path: Path) -> None:
    env = FakeEnv(files={"/home/user/a.txt": b"a"})
    with pytest.raises(EvalError, match="no file name"):
        get_state(env, {"type": "vm_file", "path": "/home/user/a.txt", "dest": "x/.."}, eval_ctx(tmp_path))


def test_cloud_file_resolves_urls_in_the_cache_only(tmp_path: Path) -> None:
    ctx = eval_ctx(tmp_path)
    url_cache.store(ctx.cache_dir, URL, b"gold bytes")
    path = get_state(FakeEnv(), {"type": "cloud_file", "path": URL, "dest": "gold.sh"}, ctx)
    assert path == str(tmp_path / "work" / "gold.sh")
    assert Path(path).read_bytes() == b"gold bytes"
    other = "https://example.org/x/y.docx"
    (ctx.cache_dir / f"{uuid.uuid5(uuid.NAMESPACE_URL, other)}_y.docx").write_bytes(b"docx")
    multi = {"type": "cloud_file", "multi": True, "path": [URL, other], "dest": ["g.sh", "y.docx"], "gives": [0, 1]}
    assert get_state(FakeEnv(), multi, ctx) == [str(tmp_path / "work" / "g.sh"), str(tmp_path / "work" / "y.docx")]
    missing = "https://example.org/not-cached.txt"
    with pytest.raises(EvalError) as info:
        get_state(FakeEnv(), {"type": "cloud_file", "path": missing, "dest": "n.txt"}, ctx)
    assert missing in str(info.value) and str(ctx.cache_dir) in str(info.value)


@pytest.mark.parametrize("config", [{"type": "no_such_getter"}, {"path": "/x"}, {"type": None}])
def test_unknown_getter_type_is_an_eval_error_naming_it(tmp_path: Path, config: dict[str, Any]) -> None:
    with pytest.raises(EvalError) as info:
        get_state(FakeEnv(), config, eval_ctx(tmp_path))
    assert repr(config.get("type")) in str(info.value)
    assert isinstance(info.value, RuntimeError)


def test_getter_transport_errors_propagate(tmp_path: Path) -> None:
    with pytest.raises(TransportDown):
        get_state(FakeEnv(fail_with=TransportDown("down")), {"type": "vm_terminal_output"}, eval_ctx(tmp_path))


