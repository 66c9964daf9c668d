"""Observation routes: screenshot, sizes, cursor, platform, accessibility tree, terminal text,
wallpaper, desktop path (OSWorld `desktop_env/server/main.py`); the window list (`/windows`, ours)."""

from __future__ import annotations

import dataclasses
import time

from fastapi import APIRouter, Form
from fastapi.responses import FileResponse, PlainTextResponse, Response
from prometheus_client import Histogram

from services.desktop_env import accessibility, screen, wallpaper, x11
from services.desktop_env.operations import OperationError
from services.desktop_env.pod import PodDep
from services.desktop_env.schemas import (
    AccessibilityReply,
    DesktopPath,
    ErrorReply,
    ScreenSize,
    TerminalReply,
    WindowEntry,
)

SCREENSHOT_SECONDS = Histogram("desktop_env_screenshot_seconds", "Duration of /screenshot (grab + PNG)")

router = APIRouter(tags=["observe"])


@router.get("/screenshot", response_class=Response, responses={200: {"content": {"image/png": {}}}})
def screenshot(pod: PodDep) -> Response:
    """PNG of the whole screen with the mouse cursor drawn."""
    started = time.perf_counter()
    png = screen.screenshot_png(pod.display)
    SCREENSHOT_SECONDS.observe(time.perf_counter() - started)
    return Response(png, media_type="image/png")


@router.post("/screen_size", response_model=ScreenSize)
def screen_size(pod: PodDep) -> ScreenSize:
    """Screen size in pixels."""
    width, height = x11.screen_size(pod.display)
    return ScreenSize(width=width, height=height)


@router.post("/window_size", response_model=ScreenSize, responses={400: {"model": ErrorReply},
                                                                    404: {"model": ErrorReply}})
def window_size(pod: PodDep, app_class_name: str | None = Form(default=None)) -> ScreenSize:
    """Size of the first window whose WM_CLASS names `app_class_name` (form field). 400 without
    it; 404 when no window matches (OSWorld's server fails with a 500 there)."""
    if not app_class_name:
        raise OperationError(400, "app_class_name is required")
    size = x11.window_size(pod.display, app_class_name)
    if size is None:
        raise OperationError(404, f"no window with class {app_class_name!r}")
    return ScreenSize(width=size[0], height=size[1])


@router.get("/windows", response_model=list[WindowEntry])
def windows(pod: PodDep) -> list[WindowEntry]:
    """The managed top-level windows, oldest first (an extension of OSWorld's protocol: the runner
    waits on it for the windows a task's setup starts, `services/runner/first_screen.py`)."""
    return [WindowEntry(**dataclasses.asdict(window)) for window in x11.list_windows(pod.display)]


@router.get("/cursor_position", response_model=list[int])
def cursor_position(pod: PodDep) -> list[int]:
    """`[x, y]` of the pointer in pixels."""
    return list(x11.cursor_position(pod.display))


@router.get("/platform", response_class=PlainTextResponse)
def platform() -> str:
    """The env's operating system: "Linux"."""
    return "Linux"


@router.get("/accessibility", response_model=AccessibilityReply)
def accessibility_tree(pod: PodDep) -> AccessibilityReply:
    """The accessibility tree (OSWorld's XML format)."""
    return AccessibilityReply(AT=accessibility.tree_xml(x11.list_windows(pod.display), pod.desktop.env))


@router.get("/terminal", response_model=TerminalReply)
def terminal(pod: PodDep) -> TerminalReply:
    """Text of the focused terminal window; `output` null when none is open."""
    text = pod.desktop.terminals.current_text(pod.display)
    return TerminalReply(output=None if text is None else pod.mapper.to_osworld(text))


@router.post("/wallpaper", response_class=FileResponse, responses={200: {"content": {"image/png": {}}},
                                                                   404: {"model": ErrorReply},
                                                                   500: {"model": ErrorReply}})
def get_wallpaper(pod: PodDep) -> FileResponse:
    """The wallpaper image file (sent as `image/png` whatever its format, as OSWorld does); 404
    when none is set or its file is missing; 500 when gsettings fails."""
    try:
        path = wallpaper.current(pod.desktop.commands)
    except wallpaper.WallpaperError as exc:
        raise OperationError(500, str(exc)) from exc
    if path is None or not path.is_file():
        shown = f": {pod.mapper.to_osworld(str(path))}" if path else ""
        raise OperationError(404, f"Wallpaper file not found{shown}")
    return FileResponse(path, media_type="image/png")


@router.post("/desktop_path", response_model=DesktopPath, responses={404: {"model": ErrorReply}})
def desktop_path(pod: PodDep) -> DesktopPath:
    """`~/Desktop` of the env as OSWorld names it; 404 when it does not exist."""
    desktop = pod.desktop.home / "Desktop"
    if not desktop.is_dir():
        raise OperationError(404, "Unsupported operating system or desktop path not found")
    return DesktopPath(desktop_path=pod.mapper.to_osworld(str(desktop)))
