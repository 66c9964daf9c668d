"""Setup routes: `/setup/open_file`, `/setup/change_wallpaper`, `/setup/download_file`
(OSWorld `desktop_env/server/main.py`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from services.desktop_env import operations, wallpaper
from services.desktop_env.operations import OperationError
from services.desktop_env.pod import PodDep
from services.desktop_env.schemas import DownloadBody, ErrorReply, OpenFileBody, PathBody

router = APIRouter(tags=["setup"])

OPEN_FILE_TIMEOUT_S = 30.0  # ours; OSWorld waits up to 1800 s
DOWNLOAD_ATTEMPTS = 3  # as OSWorld
DOWNLOAD_TIMEOUT_S = 300.0


@router.post("/setup/open_file", response_class=PlainTextResponse,
             responses={400: {"model": ErrorReply}, 404: {"model": ErrorReply}, 500: {"model": ErrorReply}})
def open_file(pod: PodDep, body: OpenFileBody) -> str:
    """Open a file with its default application (`xdg-open`), or start a program named by `path`
    when no such file exists, then wait for its window and focus it. 404 when neither exists;
    500 when no window appears in time."""
    if not body.path:
        raise OperationError(400, "Path not supplied!")
    target = pod.resolve(body.path)
    if target.exists():
        command, candidates = ["xdg-open", str(target)], [target.name, target.stem]
    elif shutil.which(body.path, path=pod.desktop.env.get("PATH")):
        command, candidates = [body.path], [body.path]
    else:
        raise OperationError(404, f"Application/file not found: {body.path}")
    if body.window_name:
        candidates = [body.window_name]
    try:
        pod.desktop.commands.launch(command, shell=False)
    except OSError as exc:
        raise OperationError(500, f"Failed to open {body.path}. Error: {exc}") from exc
    operations.open_and_activate(pod.display, candidates, body.timeout_seconds or body.timeout or OPEN_FILE_TIMEOUT_S)
    return "File opened and window activated successfully"


@router.post("/setup/change_wallpaper", response_class=PlainTextResponse,
             responses={400: {"model": ErrorReply}, 404: {"model": ErrorReply}, 500: {"model": ErrorReply}})
def change_wallpaper(pod: PodDep, body: PathBody) -> str:
    """Make an image file of the env the desktop wallpaper (see `wallpaper`)."""
    if not body.path:
        raise OperationError(400, "Path not supplied!")
    image = pod.resolve(body.path)
    if not image.exists():
        raise OperationError(404, f"File not found: {body.path}")
    try:
        wallpaper.change(pod.desktop.commands, image)
    except wallpaper.WallpaperError as exc:
        raise OperationError(500, f"Failed to change wallpaper. Error: {exc}") from exc
    return "Wallpaper changed successfully"


def _download(url: str, target: Path) -> int:
    """Stream `url` into `target`; returns its size in bytes. Raises: httpx.HTTPError, OSError,
    ValueError when fewer bytes arrived than the Content-Length announced."""
    with httpx.stream("GET", url, timeout=DOWNLOAD_TIMEOUT_S, follow_redirects=True) as response:
        response.raise_for_status()
        expected = int(response.headers.get("content-length") or 0)
        with target.open("wb") as out:
            for chunk in response.iter_bytes(1 << 16):
                out.write(chunk)
    size = target.stat().st_size
    if expected and size != expected:
        raise ValueError(f"Download incomplete. Expected {expected} bytes, got {size} bytes")
    return size


@router.post("/setup/download_file", response_class=PlainTextResponse,
             responses={400: {"model": ErrorReply}, 500: {"model": ErrorReply}})
def download_file(pod: PodDep, body: DownloadBody) -> str:
    """Download `url` into `path` in the env (parents created), up to 3 attempts; a partial file
    is removed. 500 naming the last error when every attempt failed."""
    if not body.url or not body.path:
        raise OperationError(400, "Path or URL not supplied!")
    target = pod.resolve_confined(body.path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OperationError(400, f"cannot write {body.path!r}: {exc.strerror or exc}") from None
    error: Exception | None = None
    for _ in range(DOWNLOAD_ATTEMPTS):
        try:
            return f"File downloaded successfully: {_download(body.url, target)} bytes"
        except (httpx.HTTPError, OSError, ValueError) as exc:
            error = exc
            target.unlink(missing_ok=True)
    raise OperationError(500, f"Failed to download {body.url}. No retries left. Error: {error}")
