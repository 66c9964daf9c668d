"""Pure parts of the sandbox: mount table parsing, addresses, the launcher's choice of mode."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from services.desktop_env import launcher as launcher_module
from services.desktop_env.launcher import LocalEnvLauncher
from services.desktop_env.netns import EnvNetwork, slot_count
from services.desktop_env.sandbox_fs import HostMount, overlaid_mounts, parse_mountinfo

MOUNTINFO = """\
22 1 253:1 / / rw,relatime - ext4 /dev/vda rw
23 22 0:5 / /proc rw - proc proc rw
24 22 0:6 / /dev rw - devtmpfs udev rw
25 22 253:2 / /work rw - ext4 /dev/vdb rw
26 25 253:3 / /work/data\\040set rw - xfs /dev/vdc rw
27 22 0:40 / /mnt/tools ro - model_tools_unavailable none ro
28 22 0:41 / /srv rw - tmpfs tmpfs rw
29 28 0:42 / /srv rw - cgroup2 cgroup2 rw
30 22 0:43 / /tmp/x rw - ext4 /dev/vdd rw
"""


def test_mountinfo_parsing_and_which_mounts_get_an_overlay() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert HostMount("/work/data set", "xfs") in mounts
    chosen = [m.mount_point for m in overlaid_mounts(mounts)]
    # / is the root overlay; /proc, /dev, /tmp are the sandbox's own; unknown and pseudo fs are left
    # out, also when stacked over a real one (/srv); parents come before children.
    assert chosen == ["/work", "/work/data set"]


def test_env_addresses_are_disjoint_slash_30s() -> None:
    assert slot_count("10.213.0.0/16") == 16384
    first, second = EnvNetwork(0), EnvNetwork(1)
    assert (first.host_ip, first.env_ip, second.host_ip, second.env_ip) == \
        ("10.213.0.1", "10.213.0.2", "10.213.0.5", "10.213.0.6")
    assert len(EnvNetwork(16383).host_if) <= 15
    with pytest.raises(ValueError, match="outside subnet"):
        EnvNetwork(16384)
    with pytest.raises(ValueError, match="IPv4"):
        slot_count("fd00::/64")


def test_unsandboxed_fallback_is_refused_unless_allowed_then_warns_naming_what_is_not_isolated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(launcher_module.sandbox, "unavailable_reason", lambda: "not running as root")
    monkeypatch.delenv(launcher_module.ALLOW_UNSANDBOXED_ENV, raising=False)
    with pytest.raises(RuntimeError, match="cannot be sandboxed here .not running as root.*CUA_ALLOW_UNSANDBOXED=1"):
        LocalEnvLauncher(count=1, root_dir=tmp_path)._choose_mode()
    monkeypatch.setenv(launcher_module.ALLOW_UNSANDBOXED_ENV, "1")
    auto = LocalEnvLauncher(count=1, root_dir=tmp_path)
    with caplog.at_level(logging.WARNING):
        auto._choose_mode()
    assert not auto.sandboxed
    [record] = [r for r in caplog.records if "NOT sandboxed" in r.getMessage()]
    assert "not running as root" in record.getMessage() and "sudo" in record.getMessage()
    with pytest.raises(RuntimeError, match="requested but cannot run here: not running as root"):
        LocalEnvLauncher(count=1, root_dir=tmp_path, sandbox=True)._choose_mode()
    caplog.clear()
    off = LocalEnvLauncher(count=1, root_dir=tmp_path, sandbox=False)
    off._choose_mode()
    assert not off.sandboxed and not caplog.records  # explicitly off: no warning
