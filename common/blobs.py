"""Content-addressed step files ("blobs"): what runners put to the object store before publishing a step.

A runner puts a step's screenshot (and the evaluation's evidence files) under `blob_key(data)`,
`_blobs/{sha256 of the bytes}{suffix}`, then publishes the step event with that key (stream field
`png_key`) instead of the bytes (SPEC section 7). The same bytes always get the same key, so a put
retried or repeated by another rollout (an identical first screen) rewrites identical bytes.

Runners hold a write-only credential: `s3:PutObject` on `{bucket}/_blobs/*` and nothing else
(`deploy/policies/`): no read, list, delete, no bucket check. `WriteOnlyS3` therefore only ever sends
PutObject (never HeadBucket/ListObjects/GetObject, which that credential is refused). The sink copies
each blob to the trajectory's `image_{step:04d}.png` (the layout is unchanged) and its reconciliation
deletes blobs that nothing pending can still need (`services/storage_sink/reconcile.py`).
"""

from __future__ import annotations

import io
from typing import Protocol

from common.object_keys import check_key
from common.objectstore import LocalDirStore, minio_client


class BlobWriter(Protocol):
    """What a runner may do with the store: put one object (`ObjectStore.put`'s signature)."""

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        """Store `data` under `key`. Raises: ValueError for a bad key; the store's errors otherwise."""

    def describe(self) -> str:
        """Human-readable location (no secret)."""


class WriteOnlyS3:
    """Puts objects into an S3 bucket with a write-only credential: PutObject and nothing else (no
    HeadBucket at start, no bucket creation: the sink and the deployment's init create the bucket).

    Timeouts: `connect_timeout_s` to connect, `read_timeout_s` per read; a request failing with a
    connection error or 5xx is retried `retries` times (urllib3), then raises (`minio.error.S3Error`
    for an S3 error such as AccessDenied, `urllib3.exceptions.HTTPError` for transport).
    """

    def __init__(self, bucket: str, endpoint: str, access_key: str, secret_key: str, secure: bool = False,
                 region: str = "us-east-1", connect_timeout_s: float = 5.0, read_timeout_s: float = 30.0,
                 retries: int = 2) -> None:
        self.bucket = bucket
        self.endpoint = endpoint
        self.client = minio_client(endpoint, access_key, secret_key, secure, region, connect_timeout_s,
                                   read_timeout_s, retries)

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        """PutObject `data` at `key` (checked by `check_key`). Raises: as the class says."""
        self.client.put_object(bucket_name=self.bucket, object_name=check_key(key), data=io.BytesIO(data),
                               length=len(data), content_type=content_type)

    def describe(self) -> str:
        return f"s3://{self.bucket} @ {self.endpoint} (write-only)"


def open_blob_writer(store_url: str, endpoint: str = "127.0.0.1:9000", access_key: str = "", secret_key: str = "",
                     secure: bool = False, region: str = "us-east-1") -> BlobWriter | None:
    """The runner's blob writer for `store_url`: None for "" (no store: PNGs ride on the stream),
    a `LocalDirStore` for `file://dir` (the same directory as the sink's), a `WriteOnlyS3` for
    `s3://bucket`. Raises: ValueError for another scheme."""
    from pathlib import Path
    from urllib.parse import urlparse

    if not store_url:
        return None
    url = urlparse(store_url)
    if url.scheme == "file":
        return LocalDirStore(Path(url.netloc + url.path) if url.netloc else Path(url.path))
    if url.scheme == "s3":
        return WriteOnlyS3(url.netloc or "trajectories", endpoint, access_key, secret_key, secure, region)
    raise ValueError(f"RUNNER_STORE_URL {store_url!r}: scheme must be file:// or s3:// (or empty: no store)")
