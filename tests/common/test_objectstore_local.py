"""The local store's path checks (`LocalDirStore._path`, on every put and get): these tests change the
store between puts (symlinks planted in place of or above a written directory, directories and the
root removed) and check that a key never leads outside the root and that a removed directory or root
is made again. Real files and symlinks, no mocks."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from common.objectstore import LocalDirStore


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    (directory / "t_0").mkdir(parents=True)
    return directory


def everything_under(directory: Path) -> list[str]:
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


def test_a_symlink_planted_in_place_of_a_written_directory_is_refused(tmp_path: Path, outside: Path) -> None:
    store = LocalDirStore(tmp_path / "store")
    store.put("run1/t_0/step_0000.json", b"{}")  # run1/t_0 made
    shutil.rmtree(tmp_path / "store" / "run1" / "t_0")
    os.symlink(outside / "t_0", tmp_path / "store" / "run1" / "t_0")
    with pytest.raises(ValueError, match="outside the store"):
        store.put("run1/t_0/step_0001.json", b"x")
    assert everything_under(outside) == ["t_0"]


def test_a_symlink_planted_above_a_written_directory_is_refused(tmp_path: Path, outside: Path) -> None:
    store = LocalDirStore(tmp_path / "store")
    store.put("run1/t_0/step_0000.json", b"{}")
    os.rename(tmp_path / "store" / "run1", tmp_path / "run1-moved")  # somewhere else, not linked back
    os.symlink(outside, tmp_path / "store" / "run1")  # outside/t_0 exists: the path still names a directory
    with pytest.raises(ValueError, match="outside the store"):
        store.put("run1/t_0/step_0001.json", b"x")
    assert everything_under(outside) == ["t_0"]
    assert everything_under(tmp_path / "run1-moved") == ["t_0", "t_0/step_0000.json"]


def test_a_symlink_inside_the_store_is_still_followed(tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path / "store")
    store.put("real/t_0/a.json", b"1")
    os.symlink(tmp_path / "store" / "real", tmp_path / "store" / "alias")
    store.put("alias/t_0/b.json", b"2")
    store.put("alias/t_0/c.json", b"3")
    assert store.get("real/t_0/b.json") == b"2" and store.get("real/t_0/c.json") == b"3"


def test_a_removed_directory_or_root_is_made_again(tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path / "store")
    store.put("run1/t_0/a.json", b"1")
    shutil.rmtree(tmp_path / "store" / "run1")
    store.put("run1/t_0/b.json", b"2")
    assert store.list("run1/") == ["run1/t_0/b.json"]
    shutil.rmtree(tmp_path / "store")
    store.put("run1/t_0/c.json", b"3")
    assert store.list("") == ["run1/t_0/c.json"]


def test_a_symlink_at_the_key_itself_is_replaced_not_followed(tmp_path: Path, outside: Path) -> None:
    store = LocalDirStore(tmp_path / "store")
    store.put("run1/t_0/a.json", b"1")
    os.symlink(outside / "t_0" / "target", tmp_path / "store" / "run1" / "t_0" / "b.json")
    store.put("run1/t_0/b.json", b"2")
    assert not (tmp_path / "store" / "run1" / "t_0" / "b.json").is_symlink()
    assert store.get("run1/t_0/b.json") == b"2" and everything_under(outside) == ["t_0"]


def test_a_failed_put_leaves_no_temp_file(tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path / "store")
    store.put("run1/t_0/a.json", b"1")
    (tmp_path / "store" / "run1" / "t_0" / "b.json").mkdir()  # a directory where the file goes
    with pytest.raises(OSError):
        store.put("run1/t_0/b.json", b"2")
    assert sorted(os.listdir(tmp_path / "store" / "run1" / "t_0")) == ["a.json", "b.json"]


def test_puts_from_threads_and_two_stores_of_one_root(tmp_path: Path) -> None:
    stores = [LocalDirStore(tmp_path / "store"), LocalDirStore(tmp_path / "store")]

    def write(n: int) -> None:
        for i in range(50):
            stores[i % 2].put(f"run1/t_{i % 3}/s_{n}_{i}.json", f"{n} {i}".encode())

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    keys = stores[0].list("run1/")
    assert len(keys) == 400 and not any(".tmp-" in name for name in everything_under(tmp_path / "store"))
    assert stores[1].get("run1/t_2/s_7_5.json") == b"7 5"


def test_get_in_a_written_directory_refuses_what_the_full_check_refuses(tmp_path: Path, outside: Path) -> None:
    store = LocalDirStore(tmp_path / "store")
    store.put("run1/t_0/a.json", b"1")
    trajectory = tmp_path / "store" / "run1" / "t_0"
    (outside / "secret").write_bytes(b"no")
    os.symlink(outside / "secret", trajectory / "out.json")
    with pytest.raises(ValueError, match="outside the store"):
        store.get("run1/t_0/out.json")
    os.symlink(trajectory / "a.json", trajectory / "in.json")
    assert store.get("run1/t_0/in.json") == b"1"  # a symlink inside the store is followed, as before
    os.mkfifo(trajectory / "fifo.json")
    (trajectory / "dir.json").mkdir()
    for key in ("run1/t_0/fifo.json", "run1/t_0/dir.json", "run1/t_0/missing.json", "run1/t_0/a.json/x"):
        with pytest.raises(KeyError):
            store.get(key)
    shutil.rmtree(trajectory)
    os.symlink(outside, trajectory)  # planted in place of the written directory
    with pytest.raises(ValueError, match="outside the store"):
        store.get("run1/t_0/secret")


def test_copy_checked_keeps_the_bytes_it_checked_and_nothing_when_refused(tmp_path: Path) -> None:
    store = LocalDirStore(tmp_path)
    store.put("_blobs/a.png", b"honest")
    seen: list[bytes] = []

    def check(data: bytes) -> None:
        seen.append(data)
        store.put("_blobs/a.png", b"swapped after the check")  # a put meanwhile replaces the file, not its bytes
        if data != b"honest":
            raise ValueError("does not match")

    store.copy_checked("_blobs/a.png", "run/t_0/image_0000.png", check)
    assert seen == [b"honest"] and store.get("run/t_0/image_0000.png") == b"honest"
    with pytest.raises(ValueError, match="does not match"):
        store.copy_checked("_blobs/a.png", "run/t_0/image_0001.png", check)
    assert os.listdir(tmp_path / "run" / "t_0") == ["image_0000.png"]  # no key, no temp file left
    with pytest.raises(KeyError):
        store.copy_checked("_blobs/missing.png", "run/t_0/image_0002.png", check)
