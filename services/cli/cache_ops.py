"""Filling the runners' URL cache (`common.url_cache`): from a fixtures directory, from the network
once (for users with internet), or one file at a time (offline).

Every file put in the cache by `fill`, `add` or `standins` (services/cli/standins.py) is recorded in
`manifest.json` beside `index.json`:
URL -> `{"file", "sha256", "bytes", "source"}`, so a user can check what a run's tasks read.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from common import url_cache
from common.task_urls import TaskFile

MANIFEST_FILE = "manifest.json"
#: `source` of a stand-in's manifest entry (`services.cli.standins`): `fill` replaces those.
STANDIN_SOURCE = "stand-in"
#: Downloads at once in `fill`: OSWorld's files come from one host (Hugging Face), so a few suffice.
FILL_CONCURRENCY = 4


@dataclass(frozen=True)
class FillResult:
    """What `fill` did: URLs `fetched`, `present` before, and `failed` (URL -> reason)."""

    fetched: list[str]
    present: list[str]
    failed: dict[str, str]


def seed(fixtures_dir: Path, cache_dir: Path) -> int:
    """Copy the files named by every `index.json` under `fixtures_dir` (each maps URL -> file relative
    to its own directory, e.g. `examples/fixtures/osworld/<domain>/index.json`) into `cache_dir`,
    keeping their relative paths, and merge them into the cache's own `index.json`; returns how many URLs.

    Raises: ValueError when `fixtures_dir` holds no index, or an index is unreadable, not a
    URL -> file object, or names a missing file.
    """
    index_paths = sorted(fixtures_dir.rglob(url_cache.INDEX_FILE))
    if not index_paths:
        raise ValueError(f"no fixtures index ({url_cache.INDEX_FILE}) under {fixtures_dir}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    merged_path = cache_dir / url_cache.INDEX_FILE
    merged = url_cache.read_index(merged_path) if merged_path.is_file() else {}
    seeded = 0
    for index_path in index_paths:
        index = url_cache.read_index(index_path, "fixtures index")
        for url, name in index.items():
            source = index_path.parent / str(name)
            if not source.is_file():
                raise ValueError(f"fixtures index {index_path}: {url} names {source}, which does not exist")
            relative = source.relative_to(fixtures_dir)
            (cache_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, cache_dir / relative)
            merged[url] = str(relative)
        seeded += len(index)
    _write_json(merged_path, merged)
    return seeded


def add(cache_dir: Path, url: str, file: Path, source: str = "cache add") -> Path:
    """Put the content of `file` in the cache as `url` (offline use); returns the cached path.
    Raises: ValueError when `url` is not http(s) or `file` is not a readable file."""
    if not url.lower().startswith(("http://", "https://")):
        raise ValueError(f"{url!r} is not an http(s) URL")
    if not file.is_file():
        raise ValueError(f"{file} is not a file")
    path = url_cache.store(cache_dir, url, file.read_bytes())
    record(cache_dir, {url: manifest_entry(path, source)})
    return path


def fill(cache_dir: Path, files: Iterable[TaskFile], timeout_s: float = 300.0,
         client: httpx.Client | None = None) -> FillResult:
    """Download every URL of `files` that the cache does not hold yet, once, into `cache_dir`
    (at most `FILL_CONCURRENCY` at a time, each bounded by `timeout_s` seconds); a stand-in
    (`cua-rollout cache standins`) counts as missing and is replaced. A failure is recorded per URL
    (HTTP status or transport error) and never stops the others (a failed URL keeps its stand-in)."""
    wanted = {item.url: item for item in files}
    manifest = read_manifest(cache_dir)
    present = [url for url, item in wanted.items()
               if is_cached(cache_dir, item) and manifest.get(url, {}).get("source") != STANDIN_SOURCE]
    missing = [url for url in wanted if url not in present]
    own_client = client is None
    http = client or httpx.Client(follow_redirects=True, timeout=httpx.Timeout(timeout_s, connect=30.0))
    fetched: list[str] = []
    failed: dict[str, str] = {}
    try:
        with ThreadPoolExecutor(FILL_CONCURRENCY) as pool:
            for url, error in zip(missing, pool.map(lambda u: _download(http, cache_dir, u), missing),
                                  strict=True):
                if error is None:
                    fetched.append(url)
                else:
                    failed[url] = error
    finally:
        if own_client:
            http.close()
    record(cache_dir, {url: manifest_entry(cache_dir / url_cache.cache_key(url), url) for url in fetched})
    return FillResult(fetched=fetched, present=present, failed=failed)


def is_cached(cache_dir: Path, item: TaskFile) -> bool:
    """True when the cache serves `item.url` (its index, its own file, or OSWorld's file name)."""
    try:
        url_cache.lookup(cache_dir, item.url, item.basename or None)
    except url_cache.CacheMiss:
        return False
    return True


def _download(http: httpx.Client, cache_dir: Path, url: str) -> str | None:
    """Fetch `url` into the cache (streamed to a temporary file, renamed into place); None on success,
    else the reason."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / url_cache.cache_key(url)
    handle, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=".fill-")
    try:
        with os.fdopen(handle, "wb") as out, http.stream("GET", url) as response:
            if response.status_code != 200:
                return f"HTTP {response.status_code}"
            for chunk in response.iter_bytes(1 << 20):
                out.write(chunk)
        os.replace(tmp_name, target)
        return None
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        Path(tmp_name).unlink(missing_ok=True)


def manifest_entry(path: Path, source: str) -> dict[str, object]:
    """The manifest entry of the cached file `path`: `{"file", "sha256", "bytes", "source"}`."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return {"file": path.name, "sha256": digest.hexdigest(), "bytes": path.stat().st_size, "source": source}


def read_manifest(cache_dir: Path) -> dict[str, Any]:
    """The cache's manifest: URL -> entry (see `manifest_entry`); empty when there is none."""
    path = cache_dir / MANIFEST_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def record(cache_dir: Path, entries: dict[str, dict[str, object]]) -> None:
    """Merge `entries` (URL -> `manifest_entry`) into the cache's manifest."""
    if not entries:
        return
    manifest = read_manifest(cache_dir)
    manifest.update(entries)
    _write_json(cache_dir / MANIFEST_FILE, manifest)


def _write_json(path: Path, data: object) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    tmp.replace(path)
