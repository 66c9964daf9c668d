"""A real VLC for tests: its default `vlcrc` and a headless player with its HTTP interface.

VLC refuses to run as root ("VLC is not supposed to be run as root"); when the tests run as root
it is started as `nobody` through `setpriv`, in a world-readable scratch directory (its HOME and
media). Every process started here is stopped by its PID.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from common.polling import GiveUp, free_port, wait_until

NOBODY = 65534
VLC_PASSWORD = "password"  # OSWorld's VLC HTTP password


def _unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@contextmanager
def scratch_dir() -> Iterator[Path]:
    """A directory VLC can read and write whoever it runs as; removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="cua-vlc-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def default_vlcrc() -> str:
    """The `vlcrc` VLC writes for a fresh user (`vlc --reset-config`): every option commented out
    at its default value."""
    with scratch_dir() as home:
        subprocess.run([*_unprivileged(), "vlc", "-I", "dummy", "--reset-config", "vlc://quit"],
                       env=_env(home), capture_output=True, timeout=60, check=False)
        config = home / ".config" / "vlc" / "vlcrc"
        if not config.is_file():
            raise RuntimeError("vlc --reset-config wrote no ~/.config/vlc/vlcrc")
        return config.read_text()


def status(port: int, command: str | None = None, **extra: str) -> httpx.Response:
    """GET VLC's `/requests/status.xml` (empty user, OSWorld's password), optionally running a
    playlist `command` first (e.g. `pl_pause`, `in_play` with `input=<MRL>`)."""
    params = {"command": command, **extra} if command else None
    return httpx.get(f"http://127.0.0.1:{port}/requests/status.xml", params=params, auth=("", VLC_PASSWORD),
                     timeout=5)


@contextmanager
def running_vlc(media: str, directory: Path) -> Iterator[int]:
    """A headless VLC looping `media` (a path inside `directory`, made readable, or a URL) with its
    HTTP interface on a free loopback port; yields the port once VLC reports `playing`."""
    for path in directory.rglob("*"):
        path.chmod(0o777 if path.is_dir() else 0o644)
    directory.chmod(0o777)
    port = free_port()
    process = subprocess.Popen(
        [*_unprivileged(), "vlc", "-I", "dummy", "--extraintf", "http", "--http-password", VLC_PASSWORD,
         "--http-port", str(port), "--http-host", "127.0.0.1", "--loop", "--vout", "dummy", "--aout", "dummy", media],
        env=_env(directory), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        def playing() -> bool:
            if process.poll() is not None:
                raise GiveUp(f"vlc exited with {process.returncode}")
            return "<state>playing</state>" in status(port).text

        wait_until(playing, 30, f"vlc playing {media} with its HTTP interface on port {port}")
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def serve_directory(directory: Path) -> Iterator[str]:
    """Serve `directory` over plain HTTP on a free loopback port (a stand-in for a streaming
    site); yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass
