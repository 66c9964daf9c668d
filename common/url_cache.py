"""Host-side URL cache / mirror: how `download` steps and `cloud_file` getters find files offline.

OSWorld `desktop_env/controllers/setup.py` (`_download_setup`) fetches each URL over the network
into a per-task cache; here nothing is ever fetched. A URL resolves, in this order, to:

1. `cache_dir/index.json` (`{"<url>": "<file>"}`, file relative to `cache_dir` or absolute);
2. `cache_dir/<sha256 hex of the URL>` (what `store()` writes);
3. `cache_dir/<uuid5(NAMESPACE_URL, url)>_<basename>`: the file name OSWorld itself uses, so an
   existing OSWorld cache directory can be pointed at directly (needs the destination basename).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path, PurePosixPath

INDEX_FILE = "index.json"


class CacheMiss(LookupError):
    """`url` is not in the cache; the message names the URL and the cache location."""


def cache_key(url: str) -> str:
    """File name of `url` in the cache: the hex sha256 of the UTF-8 URL."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


def read_index(path: Path, what: str = "URL cache index") -> dict[str, str]:
    """The URL -> file name object of the index file `path`.
    Raises: ValueError naming `what` and the path when it is unreadable or not a JSON object."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {what} {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise ValueError(f"{what} {path} must map URL -> file name")
    return {str(k): str(v) for k, v in raw.items()}


def _index(cache_dir: Path) -> dict[str, str]:
    path = cache_dir / INDEX_FILE
    if not path.is_file():
        return {}
    try:
        return read_index(path)
    except ValueError as exc:
        raise CacheMiss(str(exc)) from exc


def candidates(cache_dir: Path, url: str, basename: str | None = None) -> list[Path]:
    """Paths where `url` may be cached, in lookup order (see module docstring)."""
    found: list[Path] = []
    indexed = _index(cache_dir).get(url)
    if indexed is not None:
        found.append(Path(indexed) if Path(indexed).is_absolute() else cache_dir / indexed)
    found.append(cache_dir / cache_key(url))
    if basename:
        found.append(cache_dir / f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_{basename}")
    return found


def lookup(cache_dir: Path, url: str, basename: str | None = None) -> Path:
    """The cached file of `url`. `basename` (of the destination path) enables OSWorld-style names.

    Raises: CacheMiss naming the URL, the cache directory and the expected file name.
    """
    for path in candidates(cache_dir, url, basename):
        if path.is_file():
            return path
    raise CacheMiss(
        f"{url} is not in the URL cache {cache_dir} (expected {cache_dir / cache_key(url)} "
        f"or an entry in {cache_dir / INDEX_FILE}); no network fetch is done"
    )


def store(cache_dir: Path, url: str, data: bytes) -> Path:
    """Put `data` in the cache as the content of `url` (file named by `cache_key`); returns its path."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / cache_key(url)
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")  # unique: concurrent writers never collide
    tmp.write_bytes(data)
    tmp.replace(path)
    return path


def basename_of(path: str) -> str:
    """Last component of a (POSIX, env-side) path, as OSWorld's `os.path.basename`."""
    return PurePosixPath(path).name
