"""Status codes and JSON fields of the env pod's routes (OSWorld `desktop_env/server/main.py`),
especially the error replies: every one the server gives itself is JSON with an `error` key, bad
request bodies are 400s naming the field."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pytest
from PIL import Image

from common.env_client import DesktopEnvClient
from common.polling import free_port


def _post(env: DesktopEnvClient, path: str, **kwargs: object) -> httpx.Response:
    return httpx.post(f"{env.base_url}{path}", timeout=60, **kwargs)  # type: ignore[arg-type]


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == "error" and body["error"] == body["message"], body
    return str(body["error"])


@pytest.mark.parametrize(("path", "kwargs", "status", "message"), [
    ("/window_size", {}, 400, "app_class_name is required"),
    ("/window_size", {"data": {"app_class_name": "NoSuchApp"}}, 404, "no window with class 'NoSuchApp'"),
    ("/file", {}, 400, "file_path is required"),
    ("/file", {"data": {"file_path": "/home/user/none"}}, 404, "File not found"),
    ("/setup/upload", {"data": {"file_path": "/home/user/x"}}, 400, "file_path and file_data are required"),
    ("/list_directory", {"json": {}}, 400, "Missing 'path' parameter"),
    ("/list_directory", {"json": {"path": "/home/user/.bashrc"}}, 400, "The provided path is not a directory: "
                                                                        ".bashrc"),
    ("/setup/change_wallpaper", {"json": {}}, 400, "Path not supplied!"),
    ("/setup/change_wallpaper", {"json": {"path": "~/none.png"}}, 404, "File not found: ~/none.png"),
    ("/setup/open_file", {"json": {}}, 400, "Path not supplied!"),
    ("/setup/open_file", {"json": {"path": "/home/user/none.txt"}}, 404, "Application/file not found: "
                                                                          "/home/user/none.txt"),
    ("/setup/download_file", {"json": {"url": "http://127.0.0.1:9/x"}}, 400, "Path or URL not supplied!"),
    ("/setup/activate_window", {"json": {}}, 400, "window_name required"),
    ("/setup/close_window", {"json": {"window_name": "nothing", "timeout": 0}}, 404,
     "no window with title matching 'nothing' within 0 s"),
    ("/execute", {"json": {"command": []}}, 400, "Empty command."),
    ("/execute", {"json": {"command": 5}}, 400, None),
    ("/execute", {"json": {"command": "ls", "timeout": -1}}, 400, None),
    ("/run_python", {"json": {}}, 400, "Code not supplied!"),
    ("/setup/launch", {"json": {"command": ["no-such-program-xyz"]}}, 500, None),
    ("/end_recording", {}, 400, "No recording in progress to stop."),
])
def test_error_replies(env: DesktopEnvClient, path: str, kwargs: dict[str, object], status: int,
                       message: str | None) -> None:
    error = _error(_post(env, path, **kwargs), status)
    if message is not None:
        assert error == message
    else:
        assert error  # says what went wrong


def test_invalid_bodies_name_the_field(env: DesktopEnvClient) -> None:
    assert _error(_post(env, "/execute", json={"command": 5}), 400).startswith("Invalid request: command")
    assert "timeout" in _error(_post(env, "/execute", json={"command": "ls", "timeout": -1}), 400)
    assert "body" in _error(_post(env, "/execute", content=b"not json", headers={"content-type":
                                                                                  "application/json"}), 400)


def test_json_replies(env: DesktopEnvClient, home: Path) -> None:
    assert _post(env, "/screen_size").json() == {"width": 1920, "height": 1080}
    assert _post(env, "/desktop_path").json() == {"desktop_path": "/home/user/Desktop"}
    assert httpx.get(f"{env.base_url}/platform", timeout=10).text == "Linux"
    assert httpx.get(f"{env.base_url}/terminal", timeout=10).json() == {"output": None, "status": "success"}
    x, y = httpx.get(f"{env.base_url}/cursor_position", timeout=10).json()
    assert (x, y) == (960, 540)  # reset centres the pointer
    env.launch(["xterm", "-geometry", "80x24", "-T", "sized"])
    assert env.activate_window("sized", timeout_s=10)
    size = _post(env, "/window_size", data={"app_class_name": "XTERM"}).json()
    assert set(size) == {"width", "height"} and size["width"] > 100
    upload = _post(env, "/setup/upload", data={"file_path": "~/Documents/u.bin"}, files={"file_data": ("u", b"12345")})
    assert upload.text == "File Uploaded: 5 bytes" and (home / "Documents" / "u.bin").read_bytes() == b"12345"


def test_run_python_and_bash_script_shapes(env: DesktopEnvClient) -> None:
    python = _post(env, "/run_python", json={"code": "print('hi')"})
    assert python.json() == {"status": "success", "message": "hi\n", "need_more": False, "output": "hi\n",
                             "error": "", "return_code": 0}
    bash = _post(env, "/run_bash_script", json={"script": "echo a; echo b >&2; exit 2"})
    assert bash.json() == {"status": "error", "output": "a\nb\n", "error": "", "returncode": 2}
    no_script = _post(env, "/run_bash_script", json={})
    assert (no_script.status_code, no_script.json()) == (400, {"status": "error", "output": "Script not supplied!",
                                                                "error": "", "returncode": -1})
    no_dir = _post(env, "/run_bash_script", json={"script": "pwd", "working_dir": "~/none"})
    assert no_dir.status_code == 400 and no_dir.json()["output"] == "Working directory does not exist: ~/none"
    timed_out = _post(env, "/run_bash_script", json={"script": "sleep 30", "timeout": 0.5})
    assert (timed_out.status_code, timed_out.json()) == (500, {"status": "error", "error": "", "returncode": -1,
                                                                "output": "Script execution timed out after "
                                                                          "0.5 seconds"})


def test_execute_with_verification_shapes(env: DesktopEnvClient) -> None:
    plain = _post(env, "/setup/execute_with_verification", json={"command": "echo x", "shell": True})
    assert plain.json() == {"status": "success", "output": "x\n", "error": "", "returncode": 0}
    passed = env.execute_with_verification(["true"], command_success="test -d ~/Desktop", max_wait_s=5)
    assert (passed.status, passed.verification) == ("success", "passed")
    failed = _post(env, "/setup/execute_with_verification", json={
        "command": ["true"], "verification": {"window_exists": "never"}, "max_wait_time": 0.3,
        "check_interval": 0.1})
    assert failed.status_code == 500
    assert failed.json() == {"status": "verification_failed", "output": "", "error": "", "returncode": 0,
                             "verification": "failed", "wait_time": 0.3}
    assert _error(_post(env, "/setup/execute_with_verification", json={"command": ["no-such-xyz"]}), 500)


def test_download_file(env: DesktopEnvClient, home: Path, tmp_path: Path) -> None:
    refused = _post(env, "/setup/download_file", json={"url": f"http://127.0.0.1:{free_port()}/f",
                                                         "path": "~/Downloads/f"})
    assert _error(refused, 500).startswith("Failed to download http://127.0.0.1:")
    assert not (home / "Downloads" / "f").exists()


def test_wallpaper_round_trip(env: DesktopEnvClient) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "navy").save(buffer, "JPEG")
    env.upload_file("~/Pictures/w.jpg", buffer.getvalue())
    assert _post(env, "/setup/change_wallpaper", json={"path": "/home/user/Pictures/w.jpg"}).text == \
        "Wallpaper changed successfully"
    reply = _post(env, "/wallpaper")
    assert reply.content == buffer.getvalue() and reply.headers["content-type"] == "image/png"  # as OSWorld
    env.execute(["rm", "/home/user/Pictures/w.jpg"])
    assert _error(_post(env, "/wallpaper"), 404)  # the setting names a file that is gone
    env.reset()
    # the setting lives in the env's home: reset brings back the schema's default, which is a file
    # only where gnome-backgrounds is installed
    assert env.wallpaper() != buffer.getvalue()


def test_recording_shapes(env: DesktopEnvClient) -> None:
    started = _post(env, "/start_recording")
    assert started.json() == {"status": "success", "message": "Started recording successfully."}
    assert _error(_post(env, "/start_recording"), 400) == "Recording is already in progress."
    video = _post(env, "/end_recording")
    assert video.status_code == 200 and video.headers["content-type"] == "video/mp4"
    assert video.content[4:8] == b"ftyp"  # an MP4 file


def test_open_file_starts_a_program_by_name(env: DesktopEnvClient) -> None:
    reply = _post(env, "/setup/open_file", json={"path": "xterm", "timeout_seconds": 15})
    assert reply.text == "File opened and window activated successfully"
    assert "xterm" in (env.execute(["wmctrl", "-l"]).output or "")
