"""Unit tests of the OSWorld setup layer (`services/runner/osworld`): placeholders, every setup step
type against a recording test double of the env, `until`, the offline URL cache, error messages,
and the 15 real OSWorld tasks in ../shared/osworld_tasks."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from common import url_cache
from common.task import OSWorldTask, SetupStep, load_task_file
from services.runner.osworld import SetupContext, SetupError, run_setup, unsupported_features
from services.runner.osworld.placeholders import PLACEHOLDERS, placeholder_values, substitute

SHARED_TASKS = Path(__file__).resolve().parents[4] / "shared" / "osworld_tasks"


# --- test double ------------------------------------------------------------------------------


@dataclass
class FakeResult:
    """Reply of `/execute` as `common.env_client.ExecuteResult` carries it."""

    status: str = "success"
    output: str = ""
    error: str = ""
    returncode: int = 0


class TransportDown(Exception):
    """Stands in for `common.env_client.EnvError` (a transport failure) in these tests."""


Reply = Callable[[list[str] | str, bool], FakeResult]


@dataclass
class FakeEnv:
    """Test double of `common.env_client.DesktopEnvClient` (implements `EnvLike`): records every
    call in `calls` as `(method, args, kwargs)`, keeps uploaded files in `files` (env path ->
    bytes), answers commands with `reply` (or pops `queue` first), and raises `fail_with` from
    every method when it is set."""

    reply: Reply = lambda command, shell: FakeResult()  # noqa: E731
    queue: list[FakeResult] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    terminal_text: str = ""
    tree: dict[str, Any] = field(default_factory=lambda: {"name": "d", "type": "directory", "children": []})
    screen: tuple[int, int] = (1920, 1080)
    host: str = "127.0.0.1"
    a11y_xml: str = ""
    window_sizes: dict[str, dict[str, int]] = field(default_factory=dict)
    wallpaper_bytes: bytes | None = None
    fail_with: Exception | None = None
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)

    def _record(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((name, args, kwargs))
        if self.fail_with is not None:
            raise self.fail_with

    def _answer(self, command: list[str] | str, shell: bool) -> FakeResult:
        return self.queue.pop(0) if self.queue else self.reply(command, shell)

    def named(self, name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        """Arguments of every recorded call of method `name`."""
        return [(args, kwargs) for method, args, kwargs in self.calls if method == name]

    def execute(self, command: list[str] | str, shell: bool = False, timeout_s: float | None = None) -> FakeResult:
        self._record("execute", command, shell=shell)
        return self._answer(command, shell)

    def setup_execute(
        self, command: list[str] | str, shell: bool = False, timeout_s: float | None = None
    ) -> FakeResult:
        self._record("setup_execute", command, shell=shell)
        return self._answer(command, shell)

    def launch(self, command: list[str] | str, shell: bool = False) -> None:
        self._record("launch", command, shell=shell)

    def upload_file(self, file_path: str, data: bytes) -> None:
        self._record("upload_file", file_path, data)
        self.files[file_path] = data

    def get_file(self, path: str) -> bytes | None:
        self._record("get_file", path)
        return self.files.get(path)

    def terminal(self) -> str:
        self._record("terminal")
        return self.terminal_text

    def open_file(self, path: str) -> None:
        self._record("open_file", path)

    def activate_window(self, name: str, strict: bool = False, by_class: bool = False) -> None:
        self._record("activate_window", name, strict=strict, by_class=by_class)

    def close_window(self, name: str, strict: bool = False, by_class: bool = False) -> None:
        self._record("close_window", name, strict=strict, by_class=by_class)

    def list_directory(self, path: str) -> dict[str, Any]:
        self._record("list_directory", path)
        return self.tree

    def screen_size(self) -> tuple[int, int]:
        self._record("screen_size")
        return self.screen

    def accessibility(self) -> str:
        self._record("accessibility")
        return self.a11y_xml

    def window_size(self, app_class_name: str) -> dict[str, int] | None:
        self._record("window_size", app_class_name)
        return self.window_sizes.get(app_class_name)

    def wallpaper(self) -> bytes | None:
        self._record("wallpaper")
        return self.wallpaper_bytes


@dataclass
class Sleeps:
    """Injectable `sleep` that records the requested seconds instead of waiting."""

    seconds: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def make_ctx(tmp_path: Path, **overrides: Any) -> SetupContext:
    """A SetupContext with password `pw`, a 1920x1080 screen, `tmp_path/cache`, a recording sleep."""
    values: dict[str, Any] = {
        "client_password": "pw",
        "screen": (1920, 1080),
        "cache_dir": tmp_path / "cache",
        "sleep": Sleeps(),
    }
    values.update(overrides)
    return SetupContext(**values)


def steps(*raw: tuple[str, dict[str, Any]]) -> list[SetupStep]:
    return [SetupStep(type=kind, parameters=params) for kind, params in raw]


def real_tasks() -> list[OSWorldTask]:
    files = sorted(SHARED_TASKS.glob("*.json"))
    assert len(files) == 15, f"expected the 15 real OSWorld tasks in {SHARED_TASKS}"
    return [load_task_file(f) for f in files]


def download_urls(task: OSWorldTask, postconfig: bool = True) -> list[str]:
    """URLs of the task's `download` steps (config, and postconfig unless told otherwise)."""
    all_steps = [*task.config, *(task.evaluator.postconfig if postconfig else [])]
    return [f["url"] for s in all_steps if s.type == "download" for f in s.parameters["files"]]


def cache_all_downloads(tasks: list[OSWorldTask], cache_dir: Path) -> None:
    """Fill the URL cache with stub content for every download URL of `tasks`."""
    for task in tasks:
        for url in download_urls(task):
            url_cache.store(cache_dir, url, f"stub of {url}".encode())


# --- placeholders -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("{CLIENT_PASSWORD}", "s3cret"),
        ("{SCREEN_WIDTH}", "1921"),
        ("{SCREEN_HEIGHT}", "1081"),
        ("{SCREEN_WIDTH_HALF}", "960"),
        ("{SCREEN_HEIGHT_HALF}", "540"),
    ],
)
def test_each_placeholder_is_replaced_in_strings_and_lists(token: str, expected: str) -> None:
    values = placeholder_values("s3cret", (1921, 1081))  # odd sizes: halves are floor divisions
    assert substitute(f"x {token} y", values) == f"x {expected} y"
    assert substitute(["a", f"--v={token}", token], values) == ["a", f"--v={expected}", expected]


def test_placeholders_cover_exactly_the_osworld_tokens() -> None:
    assert set(placeholder_values("p", (2, 2))) == set(PLACEHOLDERS)


def test_other_braces_are_left_alone() -> None:
    values = placeholder_values("pw", (1920, 1080))
    text = "awk '{print $1}' ${HOME} {SCREEN} {client_password} {{CLIENT_PASSWORD}}"
    assert substitute(text, values) == "awk '{print $1}' ${HOME} {SCREEN} {client_password} {pw}"
    original = ["echo", "{}"]
    assert substitute(original, values) == ["echo", "{}"]
    assert original == ["echo", "{}"]  # the input list is not mutated


# --- execute / command ------------------------------------------------------------------------


def test_execute_substitutes_placeholders_and_uses_setup_execute(tmp_path: Path) -> None:
    env = FakeEnv()
    run_setup(
        steps(
            ("execute", {"command": "echo {CLIENT_PASSWORD} | sudo -S true", "shell": True}),
            ("execute", {"command": ["python", "-c", "click({SCREEN_WIDTH_HALF}, {SCREEN_HEIGHT_HALF})"]}),
        ),
        env,
        make_ctx(tmp_path),
    )
    assert env.named("setup_execute") == [
        (("echo pw | sudo -S true",), {"shell": True}),
        ((["python", "-c", "click(960, 540)"],), {"shell": False}),
    ]
    assert env.named("execute") == []  # setup goes through /setup/execute only


@pytest.mark.parametrize(("raw", "shell"), [("true", True), ("True", True), ("false", False), (1, True), (None, False)])
def test_command_is_an_alias_of_execute_and_shell_strings_are_read_by_meaning(
    tmp_path: Path, raw: object, shell: bool
) -> None:
    env = FakeEnv()
    run_setup(steps(("command", {"command": "mkdir -p /tmp/x", "shell": raw})), env, make_ctx(tmp_path))
    assert env.named("setup_execute") == [(("mkdir -p /tmp/x",), {"shell": shell})]


def test_nonzero_exit_code_is_not_a_setup_error_but_is_noted(tmp_path: Path) -> None:
    env = FakeEnv(queue=[FakeResult(), FakeResult(status="success", error="mkdir: exists", returncode=1)])
    ctx = make_ctx(tmp_path)
    run_setup(steps(("execute", {"command": "true", "shell": True}),
                    ("execute", {"command": "mkdir /home/test1", "shell": True})), env, ctx)
    assert len(env.named("setup_execute")) == 2
    assert ctx.log == [{"phase": "config", "step": 2, "command": "mkdir /home/test1", "returncode": 1,
                        "error": "mkdir: exists"}]


def test_until_returncode_reruns_until_met_and_sleeps_between(tmp_path: Path) -> None:
    env = FakeEnv(queue=[FakeResult(returncode=1), FakeResult(returncode=1), FakeResult(returncode=0)])
    ctx = make_ctx(tmp_path)
    run_setup(steps(("execute", {"command": ["pgrep", "gedit"], "until": {"returncode": 0}})), env, ctx)
    assert len(env.named("setup_execute")) == 3
    assert ctx.sleep.seconds == [0.3, 0.3]  # type: ignore[attr-defined]


def test_until_stdout_is_a_substring_test(tmp_path: Path) -> None:
    env = FakeEnv(queue=[FakeResult(output="starting"), FakeResult(output="... server ready\n")])
    run_setup(steps(("execute", {"command": "status", "until": {"stdout": "ready"}})), env, make_ctx(tmp_path))
    assert len(env.named("setup_execute")) == 2


def test_until_stderr_condition(tmp_path: Path) -> None:
    env = FakeEnv(queue=[FakeResult(error=""), FakeResult(error="warning: done")])
    run_setup(steps(("execute", {"command": "x", "until": {"stderr": "done"}})), env, make_ctx(tmp_path))
    assert len(env.named("setup_execute")) == 2


def test_until_is_bounded_and_names_the_condition(tmp_path: Path) -> None:
    env = FakeEnv(reply=lambda c, s: FakeResult(returncode=1))
    ctx = make_ctx(tmp_path, until_max_attempts=4, until_interval_s=0.01)
    with pytest.raises(SetupError, match=r"until.*returncode.*4 attempts"):
        run_setup(steps(("execute", {"command": "false", "until": {"returncode": 0}})), env, ctx)
    assert len(env.named("setup_execute")) == 4
    assert ctx.sleep.seconds == [0.01] * 3  # type: ignore[attr-defined]


def test_until_with_an_unknown_key_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="until"):
        run_setup(steps(("execute", {"command": "x", "until": {"exitcode": 0}})), FakeEnv(), make_ctx(tmp_path))


def test_stdout_and_stderr_capture_into_the_work_dir(tmp_path: Path) -> None:
    env = FakeEnv(reply=lambda c, s: FakeResult(output="out text", error="err text"))
    work = tmp_path / "work"
    capture = steps(("execute", {"command": "x", "stdout": "o.txt", "stderr": "e.txt"}))
    run_setup(capture, env, make_ctx(tmp_path, work_dir=work))
    assert (work / "o.txt").read_text() == "out text"
    assert (work / "e.txt").read_text() == "err text"
    with pytest.raises(SetupError, match="work dir"):
        run_setup(steps(("execute", {"command": "x", "stdout": "o.txt"})), env, make_ctx(tmp_path))


@pytest.mark.parametrize("command", [None, "", "   ", [], [1, 2]])
def test_execute_rejects_a_missing_or_empty_command(tmp_path: Path, command: object) -> None:
    with pytest.raises(SetupError, match="command"):
        run_setup(steps(("execute", {"command": command})), FakeEnv(), make_ctx(tmp_path))


# --- launch / open / windows / sleep ------------------------------------------------------------


def test_launch_splits_a_string_without_shell(tmp_path: Path) -> None:
    env = FakeEnv()
    run_setup(
        steps(
            ("launch", {"command": "gedit '/home/user/my notes.txt'"}),
            ("launch", {"command": "gedit a && echo {SCREEN_WIDTH}", "shell": True}),
            ("launch", {"command": ["google-chrome", "--remote-debugging-port=1337"]}),
        ),
        env,
        make_ctx(tmp_path),
    )
    assert env.named("launch") == [
        ((["gedit", "/home/user/my notes.txt"],), {"shell": False}),
        (("gedit a && echo 1920",), {"shell": True}),
        ((["google-chrome", "--remote-debugging-port=1337"],), {"shell": False}),
    ]


def test_open_activate_and_close_window(tmp_path: Path) -> None:
    env = FakeEnv()
    run_setup(
        steps(
            ("open", {"path": "/home/user/a.txt"}),
            ("activate_window", {"window_name": "Terminal"}),
            ("activate_window", {"window_name": "gedit", "strict": True, "by_class": "true"}),
            ("close_window", {"window_name": "Files", "strict": False}),
        ),
        env,
        make_ctx(tmp_path),
    )
    assert env.calls == [
        ("open_file", ("/home/user/a.txt",), {}),
        ("activate_window", ("Terminal",), {"strict": False, "by_class": False}),
        ("activate_window", ("gedit",), {"strict": True, "by_class": True}),
        ("close_window", ("Files",), {"strict": False, "by_class": False}),
    ]


def test_window_steps_need_a_window_name(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="window_name"):
        run_setup(steps(("close_window", {"name": "Terminal"})), FakeEnv(), make_ctx(tmp_path))


def test_sleep_uses_the_injected_sleep(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    env = FakeEnv()
    run_setup(steps(("sleep", {"seconds": 1}), ("sleep", {"seconds": 0.25})), env, ctx)
    assert ctx.sleep.seconds == [1.0, 0.25]  # type: ignore[attr-defined]
    assert env.calls == []


@pytest.mark.parametrize("seconds", [-1, "2", None, True])
def test_sleep_rejects_bad_seconds(tmp_path: Path, seconds: object) -> None:
    with pytest.raises(SetupError, match="seconds"):
        run_setup(steps(("sleep", {"seconds": seconds})), FakeEnv(), make_ctx(tmp_path))


# --- download (offline URL cache) / upload_file ----------------------------------------------------

URL = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/os/x/setup.sh"


def test_download_uploads_the_file_cached_under_the_url_sha256(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    cached = url_cache.store(ctx.cache_dir, URL, b"#!/bin/sh\necho hi\n")
    assert cached.name == url_cache.cache_key(URL) and len(cached.name) == 64
    env = FakeEnv()
    run_setup(steps(("download", {"files": [{"url": URL, "path": "setup.sh"}]})), env, ctx)
    assert env.named("upload_file") == [(("setup.sh", b"#!/bin/sh\necho hi\n"), {})]


def test_download_finds_files_through_index_json(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    (ctx.cache_dir / "mirror").mkdir(parents=True)
    (ctx.cache_dir / "mirror" / "a.jpg").write_bytes(b"jpg-a")
    absolute = tmp_path / "elsewhere.png"
    absolute.write_bytes(b"png-b")
    other = "https://example.org/b.png"
    (ctx.cache_dir / "index.json").write_text(json.dumps({URL: "mirror/a.jpg", other: str(absolute)}))
    env = FakeEnv()
    files = [{"url": URL, "path": "/home/user/a.jpg"}, {"url": other, "path": "/home/user/b.png"}]
    run_setup(steps(("download", {"files": files})), env, ctx)
    assert env.files == {"/home/user/a.jpg": b"jpg-a", "/home/user/b.png": b"png-b"}


def test_download_accepts_an_osworld_cache_dir(tmp_path: Path) -> None:
    """OSWorld caches a download as `<uuid5(NAMESPACE_URL, url)>_<basename of path>`."""
    ctx = make_ctx(tmp_path)
    ctx.cache_dir.mkdir()
    (ctx.cache_dir / f"{uuid.uuid5(uuid.NAMESPACE_URL, URL)}_binder.zip").write_bytes(b"zip")
    env = FakeEnv()
    run_setup(steps(("download", {"files": [{"url": URL, "path": "/home/user/Downloads/binder.zip"}]})), env, ctx)
    assert env.files == {"/home/user/Downloads/binder.zip": b"zip"}


def test_download_missing_from_cache_names_url_and_cache_and_uploads_nothing(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    env = FakeEnv()
    with pytest.raises(SetupError) as info:
        run_setup(steps(("download", {"files": [{"url": URL, "path": "setup.sh"}]})), env, ctx)
    message = str(info.value)
    assert URL in message
    assert str(ctx.cache_dir) in message
    assert url_cache.cache_key(URL) in message
    assert "step 1 (download)" in message
    assert env.calls == []


@pytest.mark.parametrize("index", ["{not json", '["a list"]'])
def test_download_with_an_unreadable_cache_index_is_a_setup_error(tmp_path: Path, index: str) -> None:
    ctx = make_ctx(tmp_path)
    ctx.cache_dir.mkdir()
    (ctx.cache_dir / "index.json").write_text(index)
    with pytest.raises(SetupError, match="index.json"):
        run_setup(steps(("download", {"files": [{"url": URL, "path": "a"}]})), FakeEnv(), ctx)


def test_url_cache_store_overwrites_atomically(tmp_path: Path) -> None:
    first = url_cache.store(tmp_path, URL, b"one")
    assert url_cache.store(tmp_path, URL, b"two") == first
    assert url_cache.lookup(tmp_path, URL).read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temporary files left behind


@pytest.mark.parametrize("files", [None, [], [{"url": URL}], [{"path": "a"}], ["x"]])
def test_download_rejects_malformed_file_lists(tmp_path: Path, files: object) -> None:
    with pytest.raises(SetupError, match="download"):
        run_setup(steps(("download", {"files": files})), FakeEnv(), make_ctx(tmp_path))


def test_upload_file_sends_files_of_the_cache_or_the_work_dir(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, work_dir=tmp_path / "work")
    (ctx.cache_dir / "fixtures").mkdir(parents=True)
    (ctx.cache_dir / "fixtures" / "a.txt").write_bytes(b"cached")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "b.txt").write_bytes(b"captured")
    env = FakeEnv()
    files = [
        {"local_path": "fixtures/a.txt", "path": "/home/user/a.txt"},
        {"local_path": "b.txt", "path": "/home/user/b.txt"},
    ]
    run_setup(steps(("upload_file", {"files": files})), env, ctx)
    assert env.files == {"/home/user/a.txt": b"cached", "/home/user/b.txt": b"captured"}


@pytest.mark.parametrize(("local_path", "problem"), [
    ("/etc/passwd", r"files\[0\].local_path '/etc/passwd' is an absolute path"),
    ("../runner.env", "climbs out"), ("leak", "'leak' not found inside"), ("runner.env", "not found inside"),
])
def test_upload_file_never_sends_a_runner_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local_path: str,
                                               problem: str) -> None:
    monkeypatch.chdir(tmp_path)  # OSWorld's fallback, the working directory, is not looked at
    ctx = make_ctx(tmp_path)
    secret = tmp_path / "runner.env"  # beside the cache, and in the working directory of the test
    secret.write_bytes(b"SECRET=1")
    ctx.cache_dir.mkdir(parents=True)
    (ctx.cache_dir / "leak").symlink_to(secret)
    env = FakeEnv()
    files = {"files": [{"local_path": local_path, "path": "/tmp/x"}]}
    # built without validation: a job that reached the runner past the producer's check (it refuses the first two)
    with pytest.raises(SetupError, match=problem):
        run_setup([SetupStep.model_construct(type="upload_file", parameters=files)], env, ctx)
    assert env.files == {}


def test_upload_file_with_a_missing_host_file_is_a_setup_error(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="nope.txt"):
        run_setup(
            steps(("upload_file", {"files": [{"local_path": "nope.txt", "path": "/tmp/x"}]})),
            FakeEnv(),
            make_ctx(tmp_path),
        )


# --- errors ----------------------------------------------------------------------------------


def test_unsupported_type_names_the_type_and_stops_there(tmp_path: Path) -> None:
    env = FakeEnv()
    with pytest.raises(SetupError) as info:
        run_setup(
            steps(
                ("execute", {"command": "echo first"}),
                ("teleport", {"to": "x"}),
                ("execute", {"command": "echo never"}),
            ),
            env,
            make_ctx(tmp_path),
        )
    assert "'teleport'" in str(info.value)
    assert "step 2" in str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert [args[0] for args, _ in env.named("setup_execute")] == ["echo first"]


def test_env_transport_errors_propagate_unwrapped_with_a_note(tmp_path: Path) -> None:
    env = FakeEnv(fail_with=TransportDown("connection refused"))
    with pytest.raises(TransportDown) as info:
        run_setup(steps(("sleep", {"seconds": 0}), ("open", {"path": "/x"})), env, make_ctx(tmp_path))
    assert "setup step 2 (open)" in " ".join(getattr(info.value, "__notes__", []))


# --- the real OSWorld tasks --------------------------------------------------------------------


def test_every_real_task_is_supported_or_names_what_is_not() -> None:
    for task in real_tasks():
        missing = unsupported_features(task)
        assert missing == [], (task.id, missing)


def test_unsupported_features_names_setup_getter_and_metric_types() -> None:
    task = OSWorldTask.model_validate(
        {
            "id": "t",
            "instruction": "x",
            "config": [{"type": "no_such_setup", "parameters": {}},
                       {"type": "execute", "parameters": {"command": "x"}}],
            "evaluator": {
                "postconfig": [{"type": "no_such_step", "parameters": {}}],
                "func": ["no_such_metric", "exact_match"],
                "result": [{"type": "vm_file", "path": "a", "dest": "a"}, {"type": "no_such_getter"}],
                "expected": [{"type": "rule", "rules": {}}, {}],
            },
        }
    )
    assert unsupported_features(task) == [
        "setup type 'no_such_setup'",
        "postconfig setup type 'no_such_step'",
        "metric 'no_such_metric'",
        "getter type 'no_such_getter'",
    ]


def test_setup_of_every_real_task_runs_against_the_fake_env(tmp_path: Path) -> None:
    tasks = real_tasks()
    cache = tmp_path / "cache"
    cache_all_downloads(tasks, cache)
    for task in tasks:
        env = FakeEnv()
        ctx = make_ctx(tmp_path, cache_dir=cache)
        run_setup(task.config, env, ctx)
        sent = json.dumps([args for method, args, _ in env.calls if method != "upload_file"])
        assert not any(token in sent for token in PLACEHOLDERS), task.id
        assert len(env.calls) == sum(len(s.parameters.get("files", [None])) for s in task.config if s.type != "sleep")
        for url in download_urls(task, postconfig=False):
            assert f"stub of {url}".encode() in env.files.values()


def test_real_task_e0df059f_setup_commands(tmp_path: Path) -> None:
    task = load_task_file(SHARED_TASKS / "os__e0df059f-28a6-4169-924f-b9623e7184cc.json")
    env = FakeEnv()
    run_setup(task.config, env, make_ctx(tmp_path, client_password="password"))
    assert env.named("setup_execute") == [
        (("echo password | sudo -S mkdir ~/Desktop/todo_list_Jan_1",), {"shell": True}),
        (
            (["python", "-c", "import pyautogui; import time; pyautogui.click(960, 540); time.sleep(0.5);"],),
            {"shell": False},
        ),
    ]
