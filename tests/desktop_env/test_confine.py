"""Env pod security on a real env (Xvfb desktop + server started by `LocalEnvLauncher`, not sandboxed,
so its allowed root is its home): `/file`, `/setup/upload` and `/list_directory` stay inside the home
whatever the path (traversal, absolute, symlinks planted in the home, unicode look-alikes, NUL, too
long), OSWorld's `/home/user/...` paths keep working, and no credential of the launching process
reaches the env server or anything it runs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from common.env_client import DesktopEnvClient
from services.desktop_env import envvars
from services.desktop_env.confine import NOT_FOLLOWED
from services.desktop_env.launcher import LocalEnvLauncher
from services.desktop_env.settings import DesktopEnvSettings

PLANTED = {"S3_SECRET_KEY": "planted-s3", "PRODUCER_API_TOKEN": "planted-token", "MY_DB_PASSWORD": "planted-pw",
           "AWS_ACCESS_KEY_ID": "planted-aws", "CUA_TOKEN": "planted-cli", "GATEWAY_ADMIN_TOKEN": "planted-gw",
           "REDIS_URL": "redis://:planted-redis@10.0.0.1:6379/0"}


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEnvLauncher]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {**PLANTED, "CUA_TEST_HARMLESS": "kept"}.items():
            patch.setenv(name, value)
        with LocalEnvLauncher(count=1, root_dir=tmp_path_factory.mktemp("secure-env"), sandbox=False) as started:
            yield started


@pytest.fixture(scope="module")
def env(launcher: LocalEnvLauncher) -> Iterator[DesktopEnvClient]:
    client = DesktopEnvClient(launcher.urls[0])
    yield client
    client.close()


@pytest.fixture()
def home(launcher: LocalEnvLauncher) -> Path:
    return launcher.home(0)


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    """A directory outside the env's home with a secret in it."""
    (tmp_path / "secret.txt").write_text("outside secret")
    return tmp_path


def _post(env: DesktopEnvClient, route: str, **kwargs: object) -> httpx.Response:
    return httpx.post(f"{env.base_url}{route}", timeout=30, **kwargs)  # type: ignore[arg-type]


def _get_file(env: DesktopEnvClient, path: str) -> httpx.Response:
    return _post(env, "/file", data={"file_path": path})


def _upload(env: DesktopEnvClient, path: str, data: bytes = b"planted") -> httpx.Response:
    return _post(env, "/setup/upload", data={"file_path": path}, files={"file_data": ("f", data)})


def _escape_paths(home: Path, outside: Path) -> list[str]:
    relative = os.path.relpath(outside, home)
    return [str(outside / "secret.txt"), f"/home/user/{relative}/secret.txt", f"{relative}/secret.txt",
            f"~/{relative}/secret.txt", f"$HOME/{relative}/secret.txt", "/etc/passwd", "/home/user/../../etc/passwd",
            "../" * 20 + "etc/passwd", "/proc/self/environ"]


def test_osworld_paths_keep_working(env: DesktopEnvClient, home: Path) -> None:
    for path, local in [("/home/user/Desktop/a.txt", "Desktop/a.txt"), ("~/Documents/b.txt", "Documents/b.txt"),
                        ("rel.txt", "rel.txt"), ("/home/user/Desktop/sub/../c.txt", "Desktop/c.txt"),
                        ("/home/user/Desktop/naïve 文件 🙂.txt", "Desktop/naïve 文件 🙂.txt"),
                        ("/home/user/\uff0e\uff0e/d.txt", "\uff0e\uff0e/d.txt")]:  # full-width dots: just a name
        assert _upload(env, path, path.encode()).status_code == 200, path
        assert (home / local).read_bytes() == path.encode()
        response = _get_file(env, path)
        assert response.status_code == 200 and response.content == path.encode(), path
    tree = env.list_directory("/home/user/Desktop")
    assert tree is not None and {c["name"] for c in tree["children"]} >= {"a.txt", "c.txt", "naïve 文件 🙂.txt"}


def test_paths_outside_the_home_are_refused(env: DesktopEnvClient, home: Path, outside: Path) -> None:
    for path in _escape_paths(home, outside):
        response = _get_file(env, path)
        assert response.status_code == 403, (path, response.text)
        assert "outside the env's sandbox" in response.json()["error"] and b"outside secret" not in response.content
        assert _upload(env, path.replace("secret.txt", "planted.txt")).status_code == 403, path
        listing = _post(env, "/list_directory", json={"path": os.path.dirname(path) or "/"})
        assert listing.status_code == 403, (path, listing.text)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert _post(env, "/setup/download_file", json={"url": "http://127.0.0.1:9/x",
                                                    "path": str(outside / "dl.bin")}).status_code == 403


def test_symlinks_in_the_home_do_not_lead_out(env: DesktopEnvClient, home: Path, outside: Path) -> None:
    (home / "Desktop").mkdir(exist_ok=True)
    (home / "Desktop" / "out").symlink_to(outside)
    (home / "Desktop" / "secret-link.txt").symlink_to(outside / "secret.txt")
    (home / "Desktop" / "inner").mkdir()
    (home / "Desktop" / "inner" / "loop").symlink_to(home / "Desktop")
    (home / "Desktop" / "ok-link").symlink_to(home / "Documents")
    try:
        for path in ("/home/user/Desktop/out/secret.txt", "/home/user/Desktop/secret-link.txt"):
            assert _get_file(env, path).status_code == 403, path
        assert _upload(env, "/home/user/Desktop/out/planted.txt").status_code == 403
        assert _upload(env, "/home/user/Desktop/secret-link.txt").status_code == 403
        assert (outside / "secret.txt").read_text() == "outside secret" and not (outside / "planted.txt").exists()
        assert _post(env, "/list_directory", json={"path": "/home/user/Desktop/out"}).status_code == 403
        tree = env.list_directory("/home/user/Desktop")
        assert tree is not None
        children = {c["name"]: c for c in tree["children"]}
        assert children["out"] == {"type": "directory", "name": "out", "children": [], "error": NOT_FOLLOWED}
        assert children["inner"]["children"][0]["error"] == NOT_FOLLOWED  # the cycle is not walked
        assert children["ok-link"]["type"] == "directory" and "error" not in children["ok-link"]
        assert _upload(env, "/home/user/Desktop/ok-link/via-link.txt").status_code == 200  # inside: fine
        assert (home / "Documents" / "via-link.txt").read_bytes() == b"planted"
    finally:
        for name in ("out", "secret-link.txt", "inner/loop", "ok-link"):
            (home / "Desktop" / name).unlink()


@pytest.mark.parametrize(("path", "status", "message"), [
    ("/home/user/a\x00b", 400, "NUL"), ("/home/user/" + "a" * 300, 400, "too long"),
    ("/home/user/" + "a/" * 3000, 400, "too long"),
])
def test_invalid_names_are_400s(env: DesktopEnvClient, path: str, status: int, message: str) -> None:
    for response in (_get_file(env, path), _upload(env, path), _post(env, "/list_directory", json={"path": path})):
        assert response.status_code == status and message in response.json()["error"], response.text


def test_no_credential_reaches_the_env(env: DesktopEnvClient, launcher: LocalEnvLauncher) -> None:
    shown = env.execute(["env"]).output  # a subprocess of the env
    zygote = env.execute(["python", "-c", "import os; print(sorted(os.environ.items()))"]).output  # zygote child
    server_pid = launcher._spawned[0].process.pid
    server = Path(f"/proc/{server_pid}/environ").read_bytes().decode(errors="replace")
    for text in (shown, zygote, server):
        assert "planted" not in text
    assert "CUA_TEST_HARMLESS=kept" in shown and "CUA_TEST_HARMLESS" in server  # the scrub is not "drop all"


def test_credential_names() -> None:
    for name in PLANTED | {"SSH_AUTH_SOCK": "", "HF_TOKEN": "", "OPENAI_API_KEY": "", "GITHUB_PAT_TOKEN": ""}:
        assert envvars.is_credential(name), name
    for name in ("PATH", "HOME", "LANG", "DISPLAY", "DESKTOP_CLIENT_PASSWORD", "XAUTHORITY", "KEYBOARD_LAYOUT"):
        assert not envvars.is_credential(name), name


def test_pod_ip_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_IP", "10.1.2.3")
    assert DesktopEnvSettings(host="pod-ip").host == "10.1.2.3"
    monkeypatch.delenv("POD_IP")
    resolved = DesktopEnvSettings(host="pod-ip").host
    assert resolved and resolved not in ("0.0.0.0", "pod-ip")
    assert DesktopEnvSettings().host == "127.0.0.1"  # the local default
    assert DesktopEnvSettings(home=Path("/tmp/h")).allowed_roots == [Path("/tmp/h").resolve()]
    assert DesktopEnvSettings(file_roots="/, /tmp").allowed_roots == [Path("/"), Path("/tmp").resolve()]


def test_sandboxed_server_environment_has_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.desktop_env import sandbox

    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    spec = sandbox.SandboxSpec(slot=3, home=Path("/tmp/h"))
    env = sandbox.server_environment(spec, Path("/run/user/1000"))
    assert not [name for name, value in env.items() if "planted" in value]
    assert env["DESKTOP_FILE_ROOTS"] == "/" and env["DESKTOP_HOST"] == spec.net.env_ip
