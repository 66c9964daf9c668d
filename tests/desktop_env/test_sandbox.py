"""The sandbox's parts that run without building one (services/desktop_env/sandbox.py, sandbox_fs.py,
sandbox_user.py): sizes, the probe's message, the user's files prepared on a root tree. The sandbox
itself (bubblewrap, real envs) is tested in tests/sandbox/."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from services.desktop_env import sandbox, sandbox_user
from services.desktop_env.sandbox_fs import size_bytes


def test_tmpfs_sizes_are_binary_and_bad_ones_are_named() -> None:
    assert (size_bytes("4g"), size_bytes("512m"), size_bytes("100")) == (4 * 2**30, 512 * 2**20, 100)
    for bad in ("4 gb", "-1g", "0", "4x", ""):
        with pytest.raises(ValueError, match="size must be digits"):
            size_bytes(bad)
    with pytest.raises(ValidationError, match="got '4GB!'"):
        sandbox.SandboxSpec(slot=1, home=Path("/tmp/h"), size="4GB!")


def test_probe_names_the_missing_commands_and_their_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no bwrap, ip, nsenter, ...
    monkeypatch.setattr(sandbox, "_reason_cache", [])
    reason = sandbox.unavailable_reason()
    if os.geteuid() != 0:
        assert reason == "not running as root (namespaces, overlay mounts and veth pairs need root)"
        return
    assert reason is not None and reason.startswith("missing commands: `bwrap` (bubblewrap), `ip` (iproute2)")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert sandbox.unavailable_reason() == reason  # probed once per process


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to the sandbox user needs root")
def test_runtime_dirs_and_home_are_prepared_for_the_user(tmp_path: Path) -> None:
    run, home, outside = tmp_path / "run", tmp_path / "home", tmp_path / "outside"
    run.mkdir()
    home.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("host file")
    (home / "old").mkdir()
    (home / "old" / "file").write_text("a previous run's")
    (home / "link").symlink_to(outside)
    assert sandbox_user.prepare_runtime_dirs(run, "desktop-env") == Path("/run/user/1000")
    for path, mode in ((run / "user" / "1000", 0o700), (run / "desktop-env", 0o700)):
        info = path.stat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (1000, 1000, mode)
    assert stat.S_IMODE((run / "lock").stat().st_mode) == 0o1777
    sandbox_user.empty_home(home)
    assert list(home.iterdir()) == [] and home.stat().st_uid == 1000
    assert (outside / "keep.txt").read_text() == "host file"  # the symlink was removed, not followed


def test_user_and_host_names_are_written_in_the_root_tree(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    sandbox_user.write_host_names("cua-env-7", "10.213.0.30", tmp_path)
    hosts = (etc / "hosts").read_text()
    assert (etc / "hostname").read_text() == "cua-env-7\n"
    assert "127.0.0.1\tlocalhost" in hosts and "10.213.0.30\tcua-env-7" in hosts


def test_reachable_changes_only_the_root_trees_copies(tmp_path: Path) -> None:
    host = tmp_path / "host" / "private" / "venv"
    host.mkdir(parents=True)
    (tmp_path / "host" / "private").chmod(0o700)
    root = tmp_path / "root"
    copy = root / host.relative_to("/")
    copy.mkdir(parents=True)
    copy.parent.chmod(0o700)
    sandbox_user.make_reachable([str(host)], root)
    assert stat.S_IMODE(copy.parent.stat().st_mode) == 0o705
    assert stat.S_IMODE((tmp_path / "host" / "private").stat().st_mode) == 0o700
