"""File routes: `/file`, `/setup/upload`, `/list_directory` (OSWorld `desktop_env/server/main.py`).
Paths are the env's: `~`, `$VARS` and `/home/user` resolved, relative paths from its home; then
confined to the env's sandbox (`confine`: 403 outside `DESKTOP_FILE_ROOTS`, symlinks included)."""

from __future__ import annotations

import os
import shutil

from fastapi import APIRouter, File, Form, UploadFile
from fastapi.responses import FileResponse, PlainTextResponse

from services.desktop_env import confine
from services.desktop_env.operations import OperationError
from services.desktop_env.pod import PodDep
from services.desktop_env.schemas import DirectoryTree, ErrorReply, PathBody

router = APIRouter(tags=["files"])


@router.post("/file", response_class=FileResponse, responses={400: {"model": ErrorReply}, 403: {"model": ErrorReply},
                                                              404: {"model": ErrorReply}})
def get_file(pod: PodDep, file_path: str | None = Form(default=None)) -> FileResponse:
    """The bytes of `file_path` (form field) as an attachment; 400 without it, 404 when it is not
    a file."""
    if not file_path:
        raise OperationError(400, "file_path is required")
    target = pod.resolve_confined(file_path)
    if not target.is_file():
        raise OperationError(404, "File not found")
    if not os.access(target, os.R_OK):  # else FileResponse fails after the headers: a bare 500
        raise OperationError(403, f"File not readable by the env's user: {file_path}")
    return FileResponse(target, filename=os.path.basename(file_path.rstrip("/")) or target.name)


@router.post("/setup/upload", response_class=PlainTextResponse, responses={400: {"model": ErrorReply},
                                                                           403: {"model": ErrorReply}})
def upload(pod: PodDep, file_path: str | None = Form(default=None),
           file_data: UploadFile | None = File(default=None)) -> str:
    """Write the uploaded `file_data` to `file_path` (parents created); answers its size."""
    if not file_path or file_data is None:
        raise OperationError(400, "file_path and file_data are required")
    target = pod.resolve_confined(file_path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # O_NOFOLLOW: a symlink planted at the target after the check is not followed out of the sandbox.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(file_data.file, out)
    except OSError as exc:
        raise OperationError(400, f"cannot write {file_path!r}: {exc.strerror or exc}") from None
    return f"File Uploaded: {target.stat().st_size} bytes"


@router.post("/list_directory", response_model=DirectoryTree, responses={400: {"model": ErrorReply},
                                                                         403: {"model": ErrorReply}})
def list_directory(pod: PodDep, body: PathBody) -> DirectoryTree:
    """Recursive tree of a directory; 400 without `path` or when it is not a directory."""
    if body.path is None:
        raise OperationError(400, "Missing 'path' parameter")
    tree = confine.directory_tree(pod.resolve_confined(body.path), os.path.basename(body.path),
                                  pod.settings.allowed_roots)
    return DirectoryTree(directory_tree=tree)
