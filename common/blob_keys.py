"""Keys of content-addressed step files ("blobs", `common/blobs.py`): `_blobs/{sha256 of the bytes}{suffix}`.

Apart from the store code, so readers of stream entries (the sink, the gateway) check keys without
importing an S3 client.
"""

from __future__ import annotations

import hashlib
import re

#: Key prefix of the blobs (run ids cannot start with `_`, `common.ids`, so no trajectory lives here).
BLOB_PREFIX = "_blobs"
#: A blob key: the prefix, 64 lowercase hex digits (sha256), an optional `.ext` suffix.
_BLOB_KEY = re.compile(rf"{BLOB_PREFIX}/[0-9a-f]{{64}}(\.[a-z0-9]{{1,8}})?")


def blob_key(data: bytes, suffix: str = ".png") -> str:
    """`_blobs/{sha256(data) hex}{suffix}`: the content address of `data` (FIPS 180-4 SHA-256).
    Raises: ValueError when `suffix` is not empty or `.` and 1-8 of a-z 0-9."""
    key = f"{BLOB_PREFIX}/{hashlib.sha256(data).hexdigest()}{suffix}"
    return check_blob_key(key)


def check_blob_key(key: str) -> str:
    """`key` when it is a blob key (`_blobs/<64 hex>[.ext]`). Raises: ValueError naming the key."""
    if not isinstance(key, str) or _BLOB_KEY.fullmatch(key) is None:
        raise ValueError(f"invalid blob key {str(key)[:120]!r}: expected {BLOB_PREFIX}/<64 hex digits>[.ext]")
    return key


def blob_digest(key: str) -> str:
    """The sha256 hex digest a blob key names (`_blobs/<64 hex>[.ext]` -> the 64 hex digits).
    Raises: ValueError naming the key when it is not a blob key (`check_blob_key`)."""
    return check_blob_key(key)[len(BLOB_PREFIX) + 1:len(BLOB_PREFIX) + 65]
