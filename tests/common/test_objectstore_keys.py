"""Object keys can never leave their run's prefix: `common.ids`, `trajectory_prefix`, the events the sink
reads, and both stores (local directory, moto's real S3 server) refuse traversal and look-alike input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from common.events import EpisodeEvent, StepEvent, decode_event, encode_event
from common.ids import check_run_id, check_task_id
from common.object_keys import MAX_SEGMENT_LENGTH, check_key, key_segment
from common.objectstore import LocalDirStore, S3Store
from common.run import trajectory_prefix

BAD_SEGMENTS = ["..", ".", "", "../x", "/abs", "a/b", "a\\b", "%2e%2e", "..%2f", "a\x00b", "a\nb", "\u2024\u2024",
                "\uff0e\uff0e", "a\u2215b", "a\u29f5b", "é", "a b", "x" * 300, ".hidden", "~"]


@pytest.mark.parametrize("bad", BAD_SEGMENTS)
def test_ids_refuse_traversal_and_homoglyphs(bad: str) -> None:
    with pytest.raises(ValueError, match="run_id"):
        check_run_id(bad)
    with pytest.raises(ValueError, match="task_id"):
        check_task_id(bad)
    with pytest.raises(ValueError):
        trajectory_prefix("run1", bad, 0)
    with pytest.raises(ValueError):
        trajectory_prefix(bad, "t", 0)


def test_ids_accept_osworld_ids() -> None:
    assert trajectory_prefix("run-1", "bb5e4c0d-f964-439c-97b6-bdb9747de3f4", 3) == \
        "run-1/bb5e4c0d-f964-439c-97b6-bdb9747de3f4_3"
    with pytest.raises(ValueError, match="rollout_index"):
        trajectory_prefix("run-1", "t", -1)
    with pytest.raises(ValueError, match="run_id"):
        check_run_id("abc\n")  # `$` alone would accept a trailing newline


@pytest.mark.parametrize("key", ["../x", "/etc/passwd", "a/../b", "a//b", "a/./b", "a/b/", "a\\..\\b", "a/%2e%2e/b",
                                 "a/\x00", "a/\u2024\u2024/b", "a/\uff0e\uff0e/b", "a/b\u2215c", "a/" + "x" * 256,
                                 "/".join(["abcd"] * 300), "run/t_0/.tmp-x", ""])
def test_check_key_refuses(key: str) -> None:
    with pytest.raises(ValueError, match="invalid object key|must be"):
        check_key(key)


def test_check_key_accepts_layout_keys_and_prefixes() -> None:
    assert check_key("run-1/t_0/image_0000.png") == "run-1/t_0/image_0000.png"
    assert check_key("run-1/", prefix=True) == "run-1/"
    assert check_key("run-1/t_0/step_", prefix=True) == "run-1/t_0/step_"
    assert check_key("", prefix=True) == ""
    with pytest.raises(ValueError):
        check_key("../", prefix=True)


def test_local_store_refuses_bad_keys_and_symlinks_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("no")
    store = LocalDirStore(tmp_path / "store")
    for key in ("../outside/secret", "run/../../outside/secret", "/" + str(outside / "secret")):
        with pytest.raises(ValueError):
            store.get(key)
        with pytest.raises(ValueError):
            store.put(key, b"x")
    os.symlink(outside, tmp_path / "store" / "run1")
    with pytest.raises(ValueError, match="outside the store"):
        store.get("run1/secret")
    with pytest.raises(ValueError, match="outside the store"):
        store.put("run1/planted", b"x")
    assert not (outside / "planted").exists()
    with pytest.raises(ValueError):
        store.list("../")
    store.put("run2/t_0/reward.txt", b"1.0")
    assert store.list("run2/") == ["run2/t_0/reward.txt"]


def test_s3_store_refuses_bad_keys(s3_endpoint: str) -> None:
    store = S3Store("keys", s3_endpoint, "testing", "testing")
    store.put("run1/t_0/reward.txt", b"1.0")
    for key in ("../run1/t_0/reward.txt", "run2/../run1/t_0/reward.txt", "/run1/t_0/reward.txt",
                "run1/t_0/reward.txt\x00", "run1/\uff0e\uff0e/t_0/reward.txt"):
        with pytest.raises(ValueError):
            store.get(key)
        with pytest.raises(ValueError):
            store.put(key, b"0.0")
    assert store.get("run1/t_0/reward.txt") == b"1.0"
    assert store.list("run1/") == ["run1/t_0/reward.txt"]


@pytest.mark.parametrize("bad", ["../x", "a/b", "\uff0e\uff0e", "a\x00"])
def test_events_with_bad_ids_are_poison_entries(bad: str) -> None:
    good = StepEvent(run_id="r", task_id="t", rollout_index=0, rollout_id="r:t:0", step=0)
    fields = encode_event(good)
    assert decode_event(fields)[0].run_id == "r"
    for field in ("run_id", "task_id"):
        data = good.model_dump(by_alias=True, mode="json")
        data[field] = bad
        with pytest.raises(ValidationError):
            StepEvent.model_validate(data)
        with pytest.raises(ValueError):
            decode_event({b"type": b"step", b"data": json.dumps(data).encode()})
    with pytest.raises(ValidationError):
        EpisodeEvent(run_id=bad, task_id="t", rollout_index=0, rollout_id="x", phase="start")


@pytest.mark.parametrize(("name", "segment"), [("Ch4 Video Effect.pptx", "Ch4_Video_Effect.pptx"),
                                               ("Serial#.xlsx", "Serial_.xlsx"), ("é.txt", "_.txt"),
                                               (".hidden", "_hidden"), ("a/../b", "a_.._b"), ("ok-1.csv", "ok-1.csv")])
def test_key_segment_makes_a_file_name_a_valid_segment(name: str, segment: str) -> None:
    assert key_segment(name) == segment
    check_key(segment)


@pytest.mark.parametrize("bad", BAD_SEGMENTS[3:])  # "", ".", ".." are no file names
def test_key_segment_of_any_bad_segment_is_valid(bad: str) -> None:
    segment = key_segment(bad)
    assert len(segment) <= MAX_SEGMENT_LENGTH and check_key(segment) == segment
    assert key_segment("x" * 300 + ".xlsx", 20).endswith(".xlsx")
