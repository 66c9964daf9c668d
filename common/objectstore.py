"""Object store for trajectories: a local directory, or S3 (MinIO) through the `minio` SDK.

Keys are `/`-separated relative paths such as `run1/task_0/image_0000.png`. Writes are idempotent:
the same key always holds the same bytes, so at-least-once delivery never duplicates anything.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from common.object_keys import check_key

if TYPE_CHECKING:
    from minio import Minio
from urllib.parse import urlparse

from common.settings import ObjectStoreSettings

#: `list_modified`'s answer: (key, last modified in seconds since the epoch) pairs (`list` is a method name below).
Listing = list[tuple[str, float]]


class ObjectStore(Protocol):
    """Minimal object store interface used by the sink and the trajectory views."""

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        """Store `data` under `key`, replacing any previous object atomically.
        Raises: ValueError when `key` is not a safe relative key (`check_key`)."""

    def get(self, key: str) -> bytes:
        """Return the object's bytes. Raises: KeyError when the key does not exist; ValueError when
        `key` is not a safe relative key (`check_key`)."""

    def list(self, prefix: str) -> list[str]:
        """All keys that start with `prefix`, sorted. Raises: ValueError for an unsafe prefix."""

    def delete(self, key: str) -> None:
        """Remove `key`; a missing key is not an error."""

    def copy(self, source: str, key: str) -> None:
        """Make `key` hold the bytes of `source` (atomically, as `put`), inside the store where it can
        (S3 CopyObject, a hard link): the bytes never travel through the caller.
        Raises: KeyError when `source` does not exist; ValueError for an unsafe key."""

    def list_modified(self, prefix: str) -> Listing:
        """(key, last modified in seconds since the epoch) of every key under `prefix`, sorted by key.
        Raises: ValueError for an unsafe prefix."""

    def describe(self) -> str:
        """Human-readable location, e.g. `/abs/dir` or `s3://bucket @ host:port`."""

    def healthy(self) -> bool:
        """True when the store answers (the sink tells an outage from an entry that cannot be written)."""


#: Numbers of the local store's temp files, shared by every store of the process (two stores of one
#: root never pick the same name).
_TEMP_NUMBERS = itertools.count()


def _create_temp(directory: str) -> tuple[int, str]:
    """A new, empty temp file `.tmp-{pid}-{n}` in `directory` (mode 0600, as `mkstemp` made them): its
    fd and path. O_CREAT|O_EXCL with a per-process counter instead of `mkstemp`'s random names (no
    name generation, no retry loop in the common case); a leftover of a crashed process with the same
    pid is skipped. Raises: OSError."""
    while True:
        path = os.path.join(directory, f".tmp-{os.getpid()}-{next(_TEMP_NUMBERS)}")
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), path
        except FileExistsError:
            continue


class LocalDirStore:
    """Objects as files under `root`. `put` writes a temp file in the key's directory, fsyncs it and
    renames it over the key's file: atomic (a reader sees the old object or the new one, never part)
    and durable before `put` returns. Every put and get checks the key's path (`_path`: no component a
    symlink that leads outside the root); missing directories are made on the first put into them.
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        """The file of `key`, checked to stay under the root even through symlinks.
        Raises: ValueError for a bad key or one that leads outside the root."""
        return self._inside(key, check_key(key))

    def _inside(self, key: str, relative: str) -> Path:
        """`relative` (a checked path of `key`) under the root, checked to stay there through symlinks
        (one lstat per existing component; a resolve only when one is a symlink). Raises: ValueError."""
        path = self.root / relative
        if self._has_symlink(relative) and not path.resolve().is_relative_to(self.root):
            raise ValueError(f"invalid object key {key!r}: leads outside the store (symlink)")
        return path

    def _has_symlink(self, relative: str) -> bool:
        """True when a component of `relative` under the root is a symlink."""
        current = str(self.root)
        for part in relative.split("/") if relative else []:
            current = os.path.join(current, part)
            try:
                if stat.S_ISLNK(os.lstat(current).st_mode):
                    return True
            except (FileNotFoundError, NotADirectoryError):
                return False
        return False

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        """Write `data` to a temp file in the key's directory (made when missing), fsync it, rename it
        over the key's file (a symlink at the key itself is replaced, never followed). Raises:
        ValueError for a bad key or one that leads outside the root; OSError from the file system."""
        directory, _, name = check_key(key).rpartition("/")
        parent = str(self._inside(key, directory))  # the key's own file is not followed: replaced
        path = os.path.join(parent, name)
        try:
            fd, tmp = _create_temp(parent)
        except FileNotFoundError:  # the first object of its directory (or the root was removed)
            os.makedirs(parent, exist_ok=True)
            fd, tmp = _create_temp(parent)
        try:
            try:
                view = memoryview(data)
                while view:  # a regular file takes it all at once, unless a signal interrupts
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def get(self, key: str) -> bytes:
        """The object's bytes. Raises: as `ObjectStore.get` (KeyError when missing or not a regular
        file, e.g. a directory or a FIFO at the key), ValueError for a key that leads outside the root."""
        path = self._path(key)
        if not path.is_file():
            raise KeyError(key)
        return path.read_bytes()

    def list(self, prefix: str) -> list[str]:
        """Keys under `prefix`, reading only what the prefix names: the entries of the directory of its
        last `/` whose names start with the rest, and the trees under the matching directories (never
        the whole store: `run1/t_0/step_` reads `run1/t_0` and no subdirectory of it)."""
        check_key(prefix, prefix=True)
        directory, _, start = prefix.rpartition("/")
        base = os.path.join(self.root, directory) if directory else str(self.root)
        keys: list[str] = []
        try:
            entries = list(os.scandir(base))
        except (FileNotFoundError, NotADirectoryError):
            return []
        for entry in entries:
            if not entry.name.startswith(start) or entry.name.startswith(".tmp-"):
                continue
            if entry.is_dir(follow_symlinks=False):
                for dirpath, _, files in os.walk(entry.path):
                    keys.extend(os.path.join(dirpath, name) for name in files if not name.startswith(".tmp-")
                                and os.path.isfile(os.path.join(dirpath, name)))
            elif entry.is_file():
                keys.append(entry.path)
        root = len(str(self.root)) + 1
        return sorted(key[root:].replace(os.sep, "/") for key in keys)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def copy(self, source: str, key: str) -> None:
        """Hard-link `source`'s file to a temp name in the key's directory and rename it over the key's file
        (atomic; no bytes copied: `put` replaces files by rename, never writes them in place, so the two names
        never diverge). Where links are refused (another file system), the bytes are copied by `put`.
        Raises: KeyError when `source` is missing; ValueError for bad keys; OSError from the file system."""
        self.copy_checked(source, key, None)

    def copy_checked(self, source: str, key: str, check: Callable[[bytes], None] | None) -> None:
        """`copy` when `check(source's bytes)` returns (it raises to refuse). The source is hard-linked to a temp
        name first and that file is read and checked: puts replace files by rename, never in place, so the
        bytes checked are the bytes kept, whatever is put at `source` meanwhile (where links are refused, the
        checked bytes are `put`); `check` None: `copy`, nothing read. Raises: KeyError when `source` is missing;
        what `check` raises; ValueError for bad keys; OSError from the file system."""
        src = self._path(source)
        if not src.is_file():
            raise KeyError(source)
        directory, _, name = check_key(key).rpartition("/")
        parent = str(self._inside(key, directory))
        os.makedirs(parent, exist_ok=True)
        tmp = os.path.join(parent, f".tmp-{os.getpid()}-{next(_TEMP_NUMBERS)}")
        try:
            os.link(src, tmp)
        except FileNotFoundError as exc:
            raise KeyError(source) from exc
        except OSError:  # EXDEV, EPERM (no hard links here)
            data = src.read_bytes()
            if check is not None:
                check(data)
            self.put(key, data)
            return
        try:
            if check is not None:
                check(Path(tmp).read_bytes())
            os.replace(tmp, os.path.join(parent, name))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def list_modified(self, prefix: str) -> Listing:
        """`list(prefix)` with each file's mtime (a key removed meanwhile is left out)."""
        out = []
        for key in self.list(prefix):
            try:
                out.append((key, os.stat(self.root / key).st_mtime))
            except FileNotFoundError:
                continue
        return out

    def describe(self) -> str:
        return str(self.root)

    def healthy(self) -> bool:
        return self.root.is_dir() and os.access(self.root, os.W_OK)


def minio_client(endpoint: str, access_key: str, secret_key: str, secure: bool, region: str,
                 connect_timeout_s: float, read_timeout_s: float, retries: int) -> Minio:
    """A minio SDK client of the S3 API at `endpoint` (host:port): `connect_timeout_s` to connect,
    `read_timeout_s` per read (seconds), a request failing with a connection error or 5xx retried
    `retries` times (urllib3, backoff 0.2 s doubling). The region is given, so the SDK never asks the
    bucket's location (GetBucketLocation, which a put-only credential may not do)."""
    import urllib3
    from minio import Minio

    http = urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=connect_timeout_s, read=read_timeout_s),
        retries=urllib3.Retry(total=retries, backoff_factor=0.2, status_forcelist=[500, 502, 503, 504]),
        maxsize=10,
    )
    return Minio(endpoint, access_key=access_key, secret_key=secret_key, secure=secure, region=region,
                 http_client=http)


class S3Store:
    """Objects in an S3 bucket through the `minio` SDK (MinIO in production, moto's server in tests).

    The bucket is created when missing (two sinks creating it at once is fine). Only standard S3 calls
    are used (no MinIO-only extensions). Timeouts: `connect_timeout_s` to connect, `read_timeout_s`
    per read; a failed request is retried `retries` times (connection errors and 5xx), then raises.
    """

    def __init__(
        self,
        bucket: str,
        endpoint: str,
        access_key: str,
        secret_key: str,
        secure: bool = False,
        region: str = "us-east-1",
        connect_timeout_s: float = 5.0,
        read_timeout_s: float = 30.0,
        retries: int = 2,
    ) -> None:
        from minio.error import S3Error

        self.bucket = bucket
        self.endpoint = endpoint
        self.client = minio_client(endpoint, access_key, secret_key, secure, region, connect_timeout_s,
                                   read_timeout_s, retries)
        if not self.client.bucket_exists(bucket_name=bucket):
            try:
                self.client.make_bucket(bucket_name=bucket)
            except S3Error as exc:  # another sink created it first
                if exc.code not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    raise

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self.client.put_object(
            bucket_name=self.bucket,
            object_name=check_key(key),
            data=io.BytesIO(data),
            length=len(data),
            content_type=content_type,
        )

    def get(self, key: str) -> bytes:
        from minio.error import S3Error

        try:
            response = self.client.get_object(bucket_name=self.bucket, object_name=check_key(key))
        except S3Error as exc:
            if exc.code in ("NoSuchKey", "NoSuchObject"):
                raise KeyError(key) from exc
            raise
        try:
            return response.read()
        finally:
            response.close()
            response.release_conn()

    def list(self, prefix: str) -> list[str]:
        objects = self.client.list_objects(bucket_name=self.bucket, prefix=check_key(prefix, prefix=True),
                                           recursive=True)
        return sorted(o.object_name for o in objects if o.object_name)

    def delete(self, key: str) -> None:
        self.client.remove_object(bucket_name=self.bucket, object_name=check_key(key))

    def copy(self, source: str, key: str) -> None:
        """S3 CopyObject inside the bucket (server-side). Raises: KeyError when `source` is missing."""
        from minio.commonconfig import CopySource
        from minio.error import S3Error

        try:
            self.client.copy_object(bucket_name=self.bucket, object_name=check_key(key),
                                    source=CopySource(bucket_name=self.bucket, object_name=check_key(source)))
        except S3Error as exc:
            if exc.code in ("NoSuchKey", "NoSuchObject"):
                raise KeyError(source) from exc
            raise

    def list_modified(self, prefix: str) -> Listing:
        objects = self.client.list_objects(bucket_name=self.bucket, prefix=check_key(prefix, prefix=True),
                                           recursive=True)
        return sorted((o.object_name, o.last_modified.timestamp() if o.last_modified else 0.0)
                      for o in objects if o.object_name)

    def describe(self) -> str:
        return f"s3://{self.bucket} @ {self.endpoint}"

    def healthy(self) -> bool:
        try:
            return bool(self.client.bucket_exists(bucket_name=self.bucket))
        except Exception:  # any transport or S3 failure: not healthy
            return False


def open_store(settings: ObjectStoreSettings | None = None) -> ObjectStore:
    """Open the store named by `STORE_URL` (`file:///dir`, `file://./rel`, or `s3://bucket`).

    Raises: ValueError for any other scheme.
    """
    settings = settings or ObjectStoreSettings()
    url = urlparse(settings.store_url)
    if url.scheme == "file":
        return LocalDirStore(Path(url.netloc + url.path) if url.netloc else Path(url.path))
    if url.scheme == "s3":
        return S3Store(
            bucket=url.netloc or "trajectories",
            endpoint=settings.s3_endpoint,
            access_key=settings.s3_access_key.get_secret_value(),
            secret_key=settings.s3_secret_key.get_secret_value(),
            secure=settings.s3_secure,
            region=settings.s3_region,
        )
    raise ValueError(f"STORE_URL {settings.store_url!r}: scheme must be file:// or s3://")
