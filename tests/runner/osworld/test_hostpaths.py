"""Runner host paths in getter states (services/runner/osworld/hostpaths.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.runner.osworld.errors import EvalError
from services.runner.osworld.hostpaths import host_file_outside, local_name, within


def test_host_file_outside_finds_runner_files_anywhere_in_a_state(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a")
    (work / "escape").symlink_to("/proc/self/environ")
    assert host_file_outside([str(work / "a.txt"), {"k": "/home/user/Desktop/x"}, 3, None], [work]) is None
    assert host_file_outside("/proc/self/environ", [work]) == "/proc/self/environ"
    assert host_file_outside({"rules": {"expected": ["x", "/etc/hostname"]}}, [work]) == "/etc/hostname"
    assert host_file_outside({"/etc/passwd": 1}, [work]) == "/etc/passwd"  # keys too
    assert host_file_outside(str(work / "escape"), [work]) == str(work / "escape")  # resolved: outside
    assert host_file_outside("/tmp", [work]) is None  # a directory names a place, not a file to read
    assert host_file_outside("/etc/hostname\n", [work]) is None and host_file_outside("etc/hostname", [work]) is None
    assert within(work / "a.txt", [work]) and not within(tmp_path, [work])


@pytest.mark.parametrize("dest", ["", ".", "..", "a/.."])
def test_local_name_refuses_names_without_a_file(dest: str) -> None:
    with pytest.raises(EvalError, match="no file name"):
        local_name(dest, "vm_file", EvalError)
    assert local_name("/x/../y/report.xlsx", "vm_file", EvalError) == "report.xlsx"
