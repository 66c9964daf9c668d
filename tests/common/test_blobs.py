"""common/blobs.py: content addresses, their checks, and which writer a store URL gives; plus the object
stores' `copy` and `list_modified` (common/objectstore.py) the sink uses on blobs, on a local directory and
moto's S3 server."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from common.blob_keys import blob_key, check_blob_key
from common.blobs import WriteOnlyS3, open_blob_writer
from common.objectstore import LocalDirStore, ObjectStore, S3Store
from common.polling import free_port


def test_a_blob_key_is_the_sha256_of_the_bytes() -> None:
    data = b"\x89PNG some screen"
    assert blob_key(data) == f"_blobs/{hashlib.sha256(data).hexdigest()}.png"
    assert blob_key(data, "") == f"_blobs/{hashlib.sha256(data).hexdigest()}"
    assert blob_key(data) == blob_key(bytes(data)) != blob_key(data + b"!")


@pytest.mark.parametrize("bad", ["_blobs/abc.png", "run-1/" + "a" * 64, "_blobs/" + "A" * 64, "_blobs/../x",
                                 "_blobs/" + "a" * 64 + ".PNG", "_blobs/" + "a" * 64 + "/x"])
def test_anything_else_is_refused_as_a_blob_key(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid blob key"):
        check_blob_key(bad)
    with pytest.raises(ValueError):
        blob_key(b"x", "/../x")


def test_the_store_url_picks_the_writer(tmp_path: Path) -> None:
    assert open_blob_writer("") is None
    assert isinstance(open_blob_writer(f"file://{tmp_path}"), LocalDirStore)
    writer = open_blob_writer("s3://traj", "127.0.0.1:1", "k", "s")  # no request at start: no HeadBucket
    assert isinstance(writer, WriteOnlyS3) and writer.describe() == "s3://traj @ 127.0.0.1:1 (write-only)"
    with pytest.raises(ValueError, match="RUNNER_STORE_URL 'gs://x'"):
        open_blob_writer("gs://x")


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalDirStore(tmp_path / "store")
    return S3Store(f"b-{free_port()}", request.getfixturevalue("s3_endpoint"), "testing", "testing")


def test_copy_gives_the_key_the_bytes_and_they_outlive_the_source(store: ObjectStore) -> None:
    key = blob_key(b"screen")
    store.put(key, b"screen")
    store.put("run-1/t_0/image_0000.png", b"old")
    store.copy(key, "run-1/t_0/image_0000.png")  # replaces what was there
    store.copy(key, "run-1/t_0/image_0000.png")  # again: idempotent
    store.delete(key)
    assert store.get("run-1/t_0/image_0000.png") == b"screen"
    with pytest.raises(KeyError):
        store.copy(key, "run-1/t_0/image_0001.png")
    assert store.list("run-1/") == ["run-1/t_0/image_0000.png"]


def test_list_modified_gives_each_keys_last_put(store: ObjectStore) -> None:
    before = time.time() - 5
    store.put("_blobs/b", b"1")
    store.put("_blobs/a", b"2")
    store.put("other/c", b"3")
    listed = store.list_modified("_blobs/")
    assert [key for key, _ in listed] == ["_blobs/a", "_blobs/b"]
    assert all(before <= modified <= before + 120 for _, modified in listed)


def test_a_local_copy_is_a_link_not_a_second_file(tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path)
    key = blob_key(b"screen")
    store.put(key, b"screen")
    store.copy(key, "run-1/t_0/image_0000.png")
    assert os.stat(tmp_path / key).st_ino == os.stat(tmp_path / "run-1/t_0/image_0000.png").st_ino
    store.put(key, b"screen")  # a re-put replaces the blob's file: the trajectory's keeps its bytes
    assert os.stat(tmp_path / key).st_ino != os.stat(tmp_path / "run-1/t_0/image_0000.png").st_ino
    assert store.get("run-1/t_0/image_0000.png") == b"screen"
