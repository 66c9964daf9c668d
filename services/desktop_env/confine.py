"""Keep the file routes (`/file`, `/setup/upload`, `/setup/download_file`, `/list_directory`) inside the
env's sandbox: a request's path, once mapped (`/home/user`, `~`, relative) and resolved (`..` and
every symlink, as the kernel would follow them), must lie under one of the env's allowed roots
(`DESKTOP_FILE_ROOTS`: the env's home by default, `/` in a sandbox whose whole root is private).

A path outside is a 403 naming it; a path that is not a valid file name (NUL byte, unpaired
surrogates, a component longer than the file system allows) is a 400. A directory listing does not
follow a symlink out of the roots, nor around a cycle.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from services.desktop_env.operations import OperationError

#: `/list_directory` entry for a symlinked directory that leads outside the roots or back up the tree.
NOT_FOLLOWED = "symlink not followed: outside the env's sandbox or a cycle"


def check_name(path: str) -> None:
    """Raises: OperationError(400) when `path` cannot name a file (NUL, unencodable, too long)."""
    if "\x00" in path:
        raise OperationError(400, f"invalid path {path[:200]!r}: contains a NUL byte")
    try:
        encoded = os.fsencode(path)
    except UnicodeError:
        raise OperationError(400, f"invalid path {path[:200]!r}: not encodable as a file name") from None
    if len(encoded) >= os.pathconf("/", "PC_PATH_MAX") or any(len(part) > 255 for part in encoded.split(b"/")):
        raise OperationError(400, f"invalid path {path[:200]!r}: too long")


def is_inside(real: Path, roots: list[Path]) -> bool:
    """True when the resolved path `real` is one of `roots` or below one."""
    return any(real == root or real.is_relative_to(root) for root in roots)


def confine(path: Path, requested: str, roots: list[Path]) -> Path:
    """The real location of `path` (the env-side mapping of the `requested` path), `..` and symlinks
    resolved, when it lies inside `roots`. A missing final part is fine (an upload's target).

    Raises: OperationError(400) for an invalid name; OperationError(403) naming `requested` when the
    path, or a symlink on the way, leads outside the roots.
    """
    check_name(str(path))
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError) as exc:
        raise OperationError(400, f"invalid path {requested[:200]!r}: {exc}") from None
    if not is_inside(real, roots):
        raise OperationError(403, f"path {requested[:200]!r} is outside the env's sandbox "
                                  f"(allowed: {', '.join(str(r) for r in roots)})")
    return real


def directory_tree(path: Path, name: str, roots: list[Path]) -> dict[str, Any]:
    """OSWorld's `/list_directory` tree of the confined directory `path` (see `operations.directory_tree`
    for the shape); a symlinked directory is followed only when it stays inside `roots` and does not
    lead back to a directory above it, else it is a `{"type": "directory", "name", "children": [],
    "error": NOT_FOLLOWED}` leaf. Raises: OperationError(400) when `path` is not a directory."""
    if not path.is_dir():
        raise OperationError(400, f"The provided path is not a directory: {name or path}")
    return _tree(path, name, roots, (os.path.realpath(path),))


def _tree(path: Path, name: str, roots: list[Path], above: tuple[str, ...]) -> dict[str, Any]:
    try:
        entries = sorted(os.listdir(path))
    except OSError as exc:
        return {"error": str(exc)}
    children: list[dict[str, Any]] = []
    for entry in entries:
        child = path / entry
        if not child.is_dir():
            children.append({"type": "file", "name": entry})
            continue
        real = os.path.realpath(child)
        if child.is_symlink() and (not is_inside(Path(real), roots) or real in above):
            children.append({"type": "directory", "name": entry, "children": [], "error": NOT_FOLLOWED})
            continue
        children.append(_tree(child, entry, roots, (*above, real)))
    return {"type": "directory", "name": name, "children": children}
