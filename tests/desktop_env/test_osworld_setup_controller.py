"""OSWorld's own `SetupController` (its PyPI package `desktop-env`, run unchanged in `.venv-oracle`,
see `osworld_client_runner.py`) against a real env pod: every setup type that works offline.

Not covered, because they need the network or a browser driver (stubbed in the runner):
`chrome_open_tabs`, `chrome_close_tabs`, `login` (playwright over CDP), `googledrive`, `proxy`.
`tidy_desktop`, `act` and `replay` raise NotImplementedError in OSWorld itself. Downloads come from
an HTTP server the test starts on loopback.
"""

from __future__ import annotations

import functools
import io
import sqlite3
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from common.env_client import DesktopEnvClient
from services.desktop_env import x11
from tests.desktop_env.osworld_client import OSWorldCallError, OSWorldClient


@pytest.fixture()
def file_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loopback HTTP server serving a fresh directory: (base URL, directory)."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture()
def cache_dir(tmp_path: Path) -> Path:
    path = tmp_path / "cache"
    path.mkdir()
    return path


def _step(kind: str, **parameters: Any) -> dict[str, Any]:
    return {"type": kind, "parameters": parameters}


def _png(color: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (24, 12), color).save(buffer, "PNG")
    return buffer.getvalue()


def test_execute_and_command_steps(env: DesktopEnvClient, osworld: OSWorldClient, cache_dir: Path,
                                   home: Path) -> None:
    config = [
        _step("execute", command=["bash", "-c", "echo out; echo err >&2"], stdout="out.txt", stderr="err.txt"),
        _step("command", command=["bash", "-c", "echo {SCREEN_WIDTH}x{SCREEN_HEIGHT} {SCREEN_WIDTH_HALF} "
                                                "{CLIENT_PASSWORD} > ~/Desktop/vars.txt"]),
        _step("launch", command=["bash", "-c", "sleep 0.5; touch ~/Desktop/flag"]),
        # Repeated (every 0.3 s, by OSWorld's client) until the flag exists.
        _step("execute", command="test -f ~/Desktop/flag && echo ready", shell=True, until={"stdout": "ready"},
              stdout="until.txt"),
        _step("sleep", seconds=0.1),
    ]
    assert osworld.setup(config, cache_dir, client_password="password") is True
    assert (cache_dir / "out.txt").read_text() == "out\n"
    assert (cache_dir / "err.txt").read_text() == "err\n"
    assert (home / "Desktop" / "vars.txt").read_text() == "1920x1080 960 password\n"
    assert (cache_dir / "until.txt").read_text() == "ready\n"


def test_window_steps(env: DesktopEnvClient, osworld: OSWorldClient, cache_dir: Path, display: str) -> None:
    config = [
        _step("launch", command=["xterm", "-T", "first-term"]),
        _step("execute_with_verification", command=["true"], verification={"window_exists": "first-term"},
              max_wait_time=15, check_interval=0.2),
        _step("launch", command="xterm -T second-term"),
        _step("execute_with_verification", command="true", shell=True,
              verification={"window_exists": "SECOND-TERM", "command_success": "wmctrl -l | grep -q second-term"},
              max_wait_time=15, check_interval=0.2),
        _step("activate_window", window_name="first-term"),
    ]
    assert osworld.setup(config, cache_dir) is True
    active = x11.active_window(display)
    assert active is not None and active.title == "first-term"
    assert osworld.setup([_step("close_window", window_name="first-term", strict=True)], cache_dir) is True
    assert env.close_window("second-term")  # still open, found by the pod's own client
    titles = {w.title for w in x11.list_windows(display)}
    assert "first-term" not in titles


def test_failed_verification_fails_the_setup(env: DesktopEnvClient, osworld: OSWorldClient, cache_dir: Path) -> None:
    config = [_step("execute_with_verification", command=["true"], verification={"command_success": "false"},
                    max_wait_time=0.5, check_interval=0.1)]
    with pytest.raises(OSWorldCallError, match="verification_failed"):
        osworld.setup(config, cache_dir)


def test_upload_open_download_and_wallpaper_steps(env: DesktopEnvClient, osworld: OSWorldClient, cache_dir: Path,
                                                  home: Path, display: str, tmp_path: Path,
                                                  file_server: tuple[str, Path]) -> None:
    base_url, served = file_server
    (served / "wall.png").write_bytes(_png("teal"))
    (served / "report.csv").write_text("a,b\n1,2\n")
    local = tmp_path / "notes.txt"
    local.write_text("notes\n")
    config = [
        _step("upload_file", files=[{"local_path": str(local), "path": "/home/user/Desktop/notes.txt"}]),
        _step("download", files=[{"url": f"{base_url}/report.csv", "path": "/home/user/Documents/report.csv"},
                                 {"url": f"{base_url}/wall.png", "path": "/home/user/Pictures/wall.png"}]),
        _step("change_wallpaper", path="/home/user/Pictures/wall.png"),
        _step("open", path="/home/user/Desktop/notes.txt"),
    ]
    assert osworld.setup(config, cache_dir) is True
    assert (home / "Desktop" / "notes.txt").read_text() == "notes\n"
    assert (home / "Documents" / "report.csv").read_text() == "a,b\n1,2\n"
    assert len(list(cache_dir.glob("*_report.csv"))) == 1  # OSWorld's client downloads through its cache
    assert env.wallpaper() == _png("teal")
    assert any("notes.txt" in w.title for w in x11.list_windows(display))
    with pytest.raises(OSWorldCallError, match="404"):
        osworld.setup([_step("open", path="/home/user/Desktop/absent.txt")], cache_dir)


def test_update_browse_history_step(env: DesktopEnvClient, osworld: OSWorldClient, cache_dir: Path,
                                    home: Path) -> None:
    # OSWorld's client downloads an empty Chrome history database unless it is cached: provide it.
    with sqlite3.connect(cache_dir / "history_new.sqlite") as db:
        db.execute("CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT, title TEXT, visit_count INTEGER, "
                   "typed_count INTEGER, last_visit_time INTEGER, hidden INTEGER)")
        db.execute("CREATE TABLE visits (id INTEGER PRIMARY KEY, url INTEGER, visit_time INTEGER, from_visit "
                   "INTEGER, transition INTEGER, segment_id INTEGER, visit_duration INTEGER)")
    history = [{"url": "https://example.org/a", "title": "A", "visit_time_from_now_in_seconds": 60},
               {"url": "https://example.org/b", "title": "B", "visit_time_from_now_in_seconds": 3600}]
    assert osworld.setup([_step("update_browse_history", history=history)], cache_dir) is True
    with sqlite3.connect(home / ".config" / "google-chrome" / "Default" / "History") as db:
        rows = db.execute("SELECT url, title FROM urls ORDER BY id").fetchall()
        visits = db.execute("SELECT COUNT(*) FROM visits").fetchone()[0]
    assert rows == [("https://example.org/a", "A"), ("https://example.org/b", "B")] and visits == 2
