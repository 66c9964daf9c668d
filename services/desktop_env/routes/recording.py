"""Recording routes: `/start_recording`, `/end_recording` (OSWorld `desktop_env/server/main.py`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse

from services.desktop_env.operations import OperationError
from services.desktop_env.pod import PodDep
from services.desktop_env.recording import RecordingFailed, RecordingStateError, RecordingUnavailable
from services.desktop_env.schemas import ErrorReply, StatusReply

router = APIRouter(tags=["recording"])
_ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorReply} for code in (400, 500, 501)}


def _status_code(exc: Exception) -> int:
    if isinstance(exc, RecordingStateError):
        return 400
    return 501 if isinstance(exc, RecordingUnavailable) else 500


@router.post("/start_recording", response_model=StatusReply, response_model_exclude_none=True, responses=_ERRORS)
def start_recording(pod: PodDep) -> StatusReply:
    """Start recording the screen. 400 while a recording runs; 500 when ffmpeg fails to start;
    501 without ffmpeg."""
    try:
        pod.desktop.recorder.start()
    except (RecordingStateError, RecordingUnavailable, RecordingFailed) as exc:
        raise OperationError(_status_code(exc), str(exc)) from exc
    return StatusReply(status="success", message="Started recording successfully.")


@router.post("/end_recording", response_class=FileResponse, responses={200: {"content": {"video/mp4": {}}}, **_ERRORS})
def end_recording(pod: PodDep) -> FileResponse:
    """Stop recording and answer the MP4. 400 when nothing is recorded; 500 when ffmpeg left no
    video."""
    try:
        path = pod.desktop.recorder.stop()
    except (RecordingStateError, RecordingUnavailable, RecordingFailed) as exc:
        raise OperationError(_status_code(exc), str(exc)) from exc
    return FileResponse(path, media_type="video/mp4", filename="recording.mp4")
