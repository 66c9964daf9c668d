"""Differential tests of the getters of `getters/{file,general,info,misc,calc}` against OSWorld's own
getters: pure ones (rules, relative dates at pinned instants) on every use in `test_nogdrive.json`
and every day name; env-reading ones with OSWorld's getter on a stand-in controller (or a local
HTTP server for `/execute`) and ours on the `FakeEnv` test double answering the same."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from services.runner.osworld import EvalContext, EvalError, get_state
from services.runner.osworld.getters.misc import relative_time_getter
from services.runner.osworld.getters.relative_time import SPECIAL
from tests.oracle.client import Oracle, same_value
from tests.oracle.tasks import getter_uses
from tests.runner.osworld.test_setup import FakeEnv, FakeResult, make_ctx

TEMPLATE = "{DoW}|{Month}|{DayD}|{Year}|{Month0D}|{month}|{MonthFull}|{Day0D}|{MonthD}"
NAMES = sorted({"tomorrow", *SPECIAL})
INSTANTS = [datetime(2025, 3, day, 15, 30, tzinfo=UTC) for day in range(10, 17)] + [
    datetime(2024, 12, 30, 23, 30, tzinfo=UTC), datetime(2025, 8, 15, 12, tzinfo=UTC),
    datetime(2025, 4, 30, 23, 59, tzinfo=UTC), datetime(2025, 1, 31, 2, 0, tzinfo=UTC)]


@pytest.fixture(scope="module")
def offline_misc() -> Iterator[Oracle]:
    """An oracle process whose `getters.misc` imports a stand-in `requests`: OSWorld's timezone lookup
    (ipapi.co) then fails at once, as on any offline host, instead of trying the network."""
    process = Oracle()
    process.call("getters.misc", "get_rule", {"rules": None}, with_env=True, stubs=("requests",))
    yield process
    process.close()


def ctx(tmp_path: Path) -> EvalContext:
    return EvalContext(setup=make_ctx(tmp_path), cache_dir=tmp_path / "cache", work_dir=tmp_path / "work")


def _relative(oracle: Oracle, config: dict[str, Any], now: datetime, tmp_path: Path) -> Any:
    """Ours and OSWorld's `rule_relativeTime` at instant `now`: the same rules, or both raise."""
    theirs = oracle.call("getters.misc", "get_rule_relativeTime", config, with_env=True, now=now.isoformat())
    getter = relative_time_getter(lambda: now)
    if not theirs.ok:
        with pytest.raises(EvalError):
            getter(FakeEnv(), config, ctx(tmp_path))
        return theirs.type
    ours = getter(FakeEnv(), config, ctx(tmp_path))
    assert same_value(ours, theirs.value), f"{config} at {now}: ours {ours} != OSWorld {theirs.value}"
    return ours


@pytest.mark.parametrize(("task_id", "config"), getter_uses("rule_relativeTime"), ids=lambda v: str(v)[:40])
def test_rule_relative_time_matches_osworld_on_every_task_at_pinned_instants(offline_misc: Oracle, tmp_path: Path,
                                                                          task_id: str, config: Any) -> None:
    outcomes = [_relative(offline_misc, config, now, tmp_path) for now in INSTANTS]
    assert any(isinstance(outcome, dict) for outcome in outcomes), task_id


@pytest.mark.parametrize("name", NAMES)
def test_rule_relative_time_matches_osworld_for_every_single_day(offline_misc: Oracle, tmp_path: Path,
                                                                 name: str) -> None:
    for now, zone in itertools.product(INSTANTS, ["Asia/Tokyo", "America/New_York", "Mars/Base", None]):
        rules: dict[str, Any] = {"relativeTime": {"from": name}, "expected": {"time": TEMPLATE, "other": "x"}}
        if zone is not None:
            rules["timezone"] = zone
        _relative(offline_misc, {"type": "rule_relativeTime", "rules": rules}, now, tmp_path)


@pytest.mark.parametrize("start", NAMES)
def test_rule_relative_time_matches_osworld_for_every_range(offline_misc: Oracle, tmp_path: Path, start: str) -> None:
    expected = {key: TEMPLATE for key in ("from", "to", "puDay", "puMonth", "puYear", "doDay", "doMonth", "doYear")}
    for end, now in itertools.product(NAMES, INSTANTS[:7:3]):
        rules = {"relativeTime": {"from": start, "to": end}, "expected": dict(expected), "timezone": "Europe/Zurich"}
        _relative(offline_misc, {"type": "rule_relativeTime", "rules": rules}, now, tmp_path)


@pytest.mark.parametrize("rules", [{"relativeTime": {"from": "yesterday"}, "expected": {"time": "x"}},
                                   {"relativeTime": {"from": "tomorrow"}, "expected": {}},
                                   {"relativeTime": {"from": "tomorrow"}, "expected": {"time": 5}},
                                   {"expected": {"time": "x"}},
                                   {"relativeTime": "tomorrow", "expected": {"time": "x"}}])
def test_rule_relative_time_bad_rules_raise_as_osworld(offline_misc: Oracle, tmp_path: Path, rules: Any) -> None:
    config = {"type": "rule_relativeTime", "rules": rules}
    assert isinstance(_relative(offline_misc, config, INSTANTS[0], tmp_path), str)


def test_rule_relative_time_leaves_the_task_config_unchanged(tmp_path: Path) -> None:
    rules = {"relativeTime": {"from": "tomorrow"}, "expected": {"time": "{Year}"}}
    config = {"type": "rule_relativeTime", "rules": rules}
    before = json.dumps(config)
    assert get_state(FakeEnv(), config, ctx(tmp_path))["expected"]["time"].isdigit()
    assert json.dumps(config) == before  # OSWorld rewrites its config in place; ours returns a copy


@pytest.mark.parametrize("config", [{"type": "rule", "rules": {"expected": [1, "a"]}},
                                    {"type": "time_diff_range", "diff_range_in_minutes": 5},
                                    {"type": "time_diff_range"}])
def test_pure_getters_match_osworld(oracle: Oracle, tmp_path: Path, config: dict[str, Any]) -> None:
    theirs = oracle.call("getters.misc", f"get_{config['type']}", config, with_env=True)
    assert theirs.ok and same_value(get_state(FakeEnv(), config, ctx(tmp_path)), theirs.value)


def test_conference_city_getter_raises_as_osworld(oracle: Oracle, tmp_path: Path) -> None:
    csv_path = tmp_path / "cities.csv"
    csv_path.write_text("Conference,Year,City\nICML,2013,Atlanta\n")
    config = {"type": "conference_city_in_order", "csv_path": str(csv_path)}
    assert oracle.call("getters.calc", "get_conference_city_in_order", config, with_env=True).type == "ValueError"
    with pytest.raises(EvalError, match="conference_city_in_order"):
        get_state(FakeEnv(), config, ctx(tmp_path))


# --- env-reading getters: OSWorld's on a stand-in controller, ours on FakeEnv ----------------------


def _researchers(path: Path, rows: list[list[Any]]) -> bytes:
    workbook = openpyxl.Workbook()
    for row in [["Name", "Citations", "h-index", "i10-index", "Top paper", "Link"], *rows]:
        workbook.active.append(row)
    workbook.save(path)
    return path.read_bytes()


def test_content_from_vm_file_matches_osworld_on_the_task(oracle: Oracle, tmp_path: Path) -> None:
    ((_, config),) = getter_uses("content_from_vm_file")
    rows = [["Geoffrey Hinton", 900000, 190, 470, "ImageNet classification", "https://x.org/a"],
            ["Yann LeCun", 345074, 147, 372, "Deep learning", "https://hal.science/hal-04206682/document"]]
    for label, table in (("two-rows", rows), ("blank-cells", [rows[0], ["Yann LeCun", None, 147.5]])):
        data = _researchers(tmp_path / f"{label}.xlsx", table)
        env = {"cache_dir": str(tmp_path / "osworld"), "controller": {"files": {config["path"]: str(tmp_path /
                                                                                                  f"{label}.xlsx")}}}
        (tmp_path / "osworld").mkdir(exist_ok=True)
        theirs = oracle.call("getters.file", "get_content_from_vm_file", config, env=env)
        ours = get_state(FakeEnv(files={config["path"]: data}), config, ctx(tmp_path / label))
        assert theirs.ok and same_value(ours, theirs.value), label
    for other in ({**config, "file_content": "first_row"}, {**config, "file_type": "csv"}):
        env = {"cache_dir": str(tmp_path / "osworld"), "controller": {"files": {}}}
        theirs = oracle.call("getters.file", "get_content_from_vm_file", other, env=env)
        if theirs.ok:
            assert get_state(FakeEnv(files={config["path"]: data}), other, ctx(tmp_path)) == theirs.value
        else:
            with pytest.raises(EvalError):
                get_state(FakeEnv(files={config["path"]: data}), other, ctx(tmp_path))


@pytest.mark.parametrize("config", [
    {"type": "vm_file", "path": "/home/user/a.txt", "dest": "a.txt"},
    {"type": "vm_file", "path": "/home/user/missing.txt", "dest": "m.txt"},
    {"type": "vm_file", "multi": True, "path": ["/home/user/a.txt", "/missing", "/home/user/b.csv"],
     "dest": ["a.txt", "m.txt", "b.csv"], "gives": [0, 1, 2]},
    {"type": "vm_file", "multi": True, "path": ["/home/user/a.txt", "/home/user/b.csv"], "dest": ["a.txt", "b.csv"]},
    {"type": "vm_file", "multi": True, "path": ["/home/user/a.txt", "/home/user/b.csv"], "dest": ["a.txt", "b.csv"],
     "gives": [1]},
])
def test_vm_file_matches_osworld(oracle: Oracle, tmp_path: Path, config: dict[str, Any]) -> None:
    files = {"/home/user/a.txt": b"alpha\n", "/home/user/b.csv": b"x,y\n1,2\n"}
    for vm_path, data in files.items():
        (tmp_path / Path(vm_path).name).write_bytes(data)
    (tmp_path / "osworld").mkdir()
    env = {"cache_dir": str(tmp_path / "osworld"),
           "controller": {"files": {vm_path: str(tmp_path / Path(vm_path).name) for vm_path in files}}}
    theirs = oracle.call("getters.file", "get_vm_file", config, env=env)
    ours = get_state(FakeEnv(files=files), config, ctx(tmp_path))
    assert theirs.ok
    for mine, their in zip(ours if isinstance(ours, list) else [ours],
                           theirs.value if isinstance(theirs.value, list) else [theirs.value], strict=True):
        assert (mine is None) == (their is None)
        if mine is not None:
            assert Path(mine).name == Path(their).name and Path(mine).read_bytes() == Path(their).read_bytes()


@pytest.mark.parametrize("wallpaper", [b"\x89PNG\r\n\x1a\nimage", b"", None])
def test_vm_wallpaper_matches_osworld(oracle: Oracle, tmp_path: Path, wallpaper: bytes | None) -> None:
    (tmp_path / "osworld").mkdir()
    controller: dict[str, Any] = {"returns": {"get_vm_wallpaper": None}}
    if wallpaper is not None:
        (tmp_path / "wallpaper.png").write_bytes(wallpaper)
        controller = {"bytes": {"get_vm_wallpaper": str(tmp_path / "wallpaper.png")}}
    config = {"type": "vm_wallpaper", "dest": "background.png"}
    theirs = oracle.call("getters.info", "get_vm_wallpaper", config,
                         env={"cache_dir": str(tmp_path / "osworld"), "controller": controller})
    ours = get_state(FakeEnv(wallpaper_bytes=wallpaper), config, ctx(tmp_path))
    assert theirs.ok and Path(ours).name == Path(theirs.value).name
    assert Path(ours).read_bytes() == Path(theirs.value).read_bytes()


@pytest.mark.parametrize(("module", "config", "method", "value", "fake"), [
    ("info", {"type": "vm_window_size", "app_class_name": "vlc"}, "get_vm_window_size", {"width": 1280, "height": 720},
     {"window_sizes": {"vlc": {"width": 1280, "height": 720}}}),
    ("info", {"type": "vm_window_size", "app_class_name": "gimp"}, "get_vm_window_size", None, {}),
    ("info", {"type": "vm_screen_size"}, "get_vm_screen_size", {"width": 1920, "height": 1080},
     {"screen": (1920, 1080)}),
    ("info", {"type": "list_directory", "path": "/home/user/cpjpg"}, "get_vm_directory_tree",
     {"name": "cpjpg", "type": "directory", "children": [{"name": "a.jpg", "type": "file"}]},
     {"tree": {"name": "cpjpg", "type": "directory", "children": [{"name": "a.jpg", "type": "file"}]}}),
    ("misc", {"type": "accessibility_tree"}, "get_accessibility_tree", "<desktop-frame/>",
     {"a11y_xml": "<desktop-frame/>"}),
    ("general", {"type": "vm_terminal_output"}, "get_terminal_output", "$ stty size\n43 132",
     {"terminal_text": "$ stty size\n43 132"}),
])
def test_env_reading_getters_match_osworld(oracle: Oracle, tmp_path: Path, module: str, config: dict[str, Any],
                                           method: str, value: Any, fake: dict[str, Any]) -> None:
    theirs = oracle.call(f"getters.{module}", f"get_{config['type']}", config,
                         env={"controller": {"returns": {method: value}}})
    assert theirs.ok and same_value(get_state(FakeEnv(**fake), config, ctx(tmp_path)), theirs.value)


class _Execute(BaseHTTPRequestHandler):
    """`POST /execute` of OSWorld's VM server, answering with the canned reply of the test."""

    reply: tuple[int, dict[str, Any]] = (200, {})
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        _Execute.seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        status, body = _Execute.reply
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def vm_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Execute)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize(("status", "body"), [
    (200, {"status": "success", "output": "uint32 0\n", "error": "", "returncode": 0}),
    (200, {"status": "success", "output": "", "error": "ModuleNotFoundError: Error: x\n", "returncode": 1}),
    (500, {"status": "error", "message": "[Errno 2] No such file or directory: 'gsettings'"}),
])
@pytest.mark.parametrize("kind", ["vm_command_line", "vm_command_error"])
def test_command_getters_match_osworld(oracle: Oracle, tmp_path: Path, vm_server: int, status: int,
                                       body: dict[str, Any], kind: str) -> None:
    for task_id, config in getter_uses(kind)[:3]:
        _Execute.reply, _Execute.seen = (status, body), []
        theirs = oracle.call("getters.general", f"get_{kind}", config,
                             env={"vm_ip": "127.0.0.1", "server_port": vm_server})
        env = FakeEnv(reply=lambda c, s: FakeResult(**{k: body.get(k) for k in ("status", "output", "error")}))
        ours = get_state(env, config, ctx(tmp_path))
        assert theirs.ok and same_value(ours, theirs.value), task_id
        assert [(seen["command"], bool(seen["shell"])) for seen in _Execute.seen] == \
            [(args[0], kwargs["shell"]) for args, kwargs in env.named("execute")], task_id
