"""The rule of object keys (both stores, `common.objectstore`): `/`-separated relative segments of a safe
alphabet, so no key leaves its run's prefix or names a hidden or temporary file; and `key_segment`, which turns
a file name from a task into such a segment."""

from __future__ import annotations

import re

#: One key segment: ASCII letters, digits, `_`, `.`, `-`, not starting with `.` (so never `.`, `..`, a
#: hidden file or the local store's `.tmp-` files). No `/`, `\\`, `%`, NUL, spaces or non-ASCII.
_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
#: S3's limit on key length (bytes); every segment is ASCII, so characters = bytes.
MAX_KEY_LENGTH = 1024
MAX_SEGMENT_LENGTH = 255


_NOT_IN_SEGMENT = re.compile(r"[^A-Za-z0-9_.-]")


def key_segment(name: str, max_length: int = MAX_SEGMENT_LENGTH) -> str:
    """`name` (a file name from a task: spaces, `#`, non-ASCII...) made a valid key segment: each character
    outside A-Z a-z 0-9 _ . - becomes `_`, a leading `.` too, and a name longer than `max_length` keeps its
    end (the extension). "Ch4 Video Effect.pptx" -> "Ch4_Video_Effect.pptx". Raises: ValueError for "" or a
    `max_length` below 1."""
    if not name or max_length < 1:
        raise ValueError(f"no key segment of {name!r} in {max_length} characters")
    safe = _NOT_IN_SEGMENT.sub("_", name)[-max_length:]
    return "_" + safe[1:] if safe.startswith(".") else safe


def check_key(key: str, prefix: bool = False) -> str:
    """`key` when it is a safe relative object key: `/`-separated segments of `_SEGMENT`, at most
    `MAX_KEY_LENGTH` characters (segments `MAX_SEGMENT_LENGTH`). With `prefix`, the empty string and
    a trailing `/` are allowed too (a listing prefix such as `run1/` or `run1/t_0/step_`).

    Raises: ValueError naming the key and the rule it breaks (`..`, absolute, NUL, non-ASCII...).
    """
    if not isinstance(key, str):
        raise ValueError(f"object key must be a string, got {type(key).__name__}")
    if prefix and key == "":
        return key
    if len(key) > MAX_KEY_LENGTH:
        raise ValueError(f"invalid object key {key[:60]!r}...: longer than {MAX_KEY_LENGTH} characters")
    parts = key.split("/")
    if prefix and len(parts) > 1 and parts[-1] == "":
        parts = parts[:-1]
    for part in parts:
        if _SEGMENT.fullmatch(part) is None or len(part) > MAX_SEGMENT_LENGTH:
            raise ValueError(f"invalid object key {key[:200]!r}: segment {part[:60]!r} must be 1 to "
                             f"{MAX_SEGMENT_LENGTH} of A-Z a-z 0-9 _ . - not starting with '.' "
                             "(a relative path without '..', '\\', '%', NUL or non-ASCII)")
    return key
