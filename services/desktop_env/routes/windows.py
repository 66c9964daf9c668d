"""Window routes: `/setup/activate_window`, `/setup/close_window` (OSWorld
`desktop_env/server/main.py`; matching as `wmctrl -a` / `wmctrl -c`, see `x11.match_windows`).

Deliberate difference: both wait up to `timeout` seconds for the window and answer 404 when there
is none (OSWorld's Linux server answers 200 whatever wmctrl did)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from services.desktop_env import operations
from services.desktop_env.operations import OperationError
from services.desktop_env.pod import PodDep
from services.desktop_env.schemas import ErrorReply, WindowBody

router = APIRouter(tags=["windows"])


@router.post("/setup/activate_window", response_class=PlainTextResponse,
             responses={400: {"model": ErrorReply}, 404: {"model": ErrorReply}})
def activate_window(pod: PodDep, body: WindowBody) -> str:
    """Raise and focus the matching window."""
    if not body.window_name:
        raise OperationError(400, "window_name required")
    operations.activate_window(pod.display, body.window_name, body.strict, body.by_class, body.timeout)
    return "Window activated successfully"


@router.post("/setup/close_window", response_class=PlainTextResponse,
             responses={400: {"model": ErrorReply}, 404: {"model": ErrorReply}})
def close_window(pod: PodDep, body: WindowBody) -> str:
    """Ask the matching window to close."""
    if not body.window_name:
        raise OperationError(400, "window_name required")
    operations.close_window(pod.display, body.window_name, body.strict, body.by_class, body.timeout)
    return "Window closed successfully."
