"""The root filesystem of a sandboxed env: what bubblewrap mounts, and the overlays it cannot.

Layout (the host is never written through it):
- `/` and every other real host filesystem (ext4, xfs, btrfs, overlay, tmpfs, ...; pseudo and unknown
  filesystems are left out) are writable overlays: the host as the read-only lower layer, the
  env's writes in an upper layer on one tmpfs (the stage) that vanishes with the env. Mount points
  whose path cannot be given to overlayfs (`,` `:` in it) or whose overlay fails are bound read-only;
  bind-mounted files (e.g. /etc/hosts in containers) are copied in. bubblewrap 0.8 (Debian 12) has no
  overlay option (`--overlay` came in 0.10), so `build_stage` mounts these with mount(8), in the
  supervisor's private mount namespace (`unshare --mount`), never in the host's;
- by bubblewrap (`bwrap_mounts`): that tree bound as `/`, `/proc` (the env's PID namespace only),
  a minimal `/dev` (null, zero, full, random, urandom, tty; own devpts) with a `/dev/shm` tmpfs, a
  fresh `/tmp` tmpfs, `/run` (a directory of the stage, laid out by `sandbox_user`), the host's
  `/sys` read-only (then replaced by a sysfs of the env's network: `SYSFS_MOUNT`), and `/home/user`:
  the env's home directory from the host, bound read-write (its files are what the launcher's
  `home(i)` shows).
bubblewrap marks every mount nosuid; `SUID_REMOUNT` re-allows setuid on `/` so that the desktop
user's `sudo` works, as on OSWorld's VMs.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Host trees replaced by the sandbox's own (never overlaid).
PRIVATE_TREES = ("/proc", "/sys", "/dev", "/run", "/tmp")
#: Filesystem types overlaid (others, e.g. cgroup or a tool's private mount, are left out).
OVERLAY_TYPES = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "overlay", "zfs", "f2fs", "vfat", "exfat",
                           "tmpfs", "9p", "virtiofs", "nfs", "nfs4", "squashfs", "iso9660"})
#: mount(8) arguments run inside the env's mount namespace (as root, before the server starts).
SUID_REMOUNT = ("-o", "remount,bind,suid", "/")
SYSFS_MOUNT = ("-t", "sysfs", "-o", "ro,nosuid,nodev,noexec", "sysfs", "/sys")
_SIZE = re.compile(r"([1-9][0-9]*)([kmgt]?)")


class MountError(OSError):
    """A mount of the stage failed; the message names the mount(8) command and its output."""


def size_bytes(size: str) -> int:
    """Bytes in a tmpfs-style size: digits with an optional binary suffix k, m, g, t (`4g` = 4 GiB).

    Raises: ValueError naming the text when it is not such a size.
    """
    match = _SIZE.fullmatch(size.strip().lower())
    if match is None:
        raise ValueError(f"size must be digits with an optional k, m, g or t suffix (e.g. 4g), got {size!r}")
    return int(match.group(1)) * 1024 ** "_kmgt".index(match.group(2) or "_")


@dataclass(frozen=True)
class HostMount:
    """One line of /proc/self/mountinfo: where it is mounted and its filesystem type."""

    mount_point: str
    fstype: str


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo (octal)
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and len(field[i + 1:i + 4]) == 3 and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[HostMount]:
    """Mounts listed in /proc/PID/mountinfo text (format: proc(5))."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        mounts.append(HostMount(_unescape(fields[4]), fields[dash + 1]))
    return mounts


def _inside(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def overlaid_mounts(mounts: list[HostMount]) -> list[HostMount]:
    """The host mounts besides `/` that get their own overlay (or read-only bind) in the sandbox,
    parents before children, duplicates (stacked mounts) once."""
    chosen: dict[str, HostMount] = {}
    for mount in mounts:
        if mount.mount_point == "/" or any(_inside(mount.mount_point, tree) for tree in PRIVATE_TREES):
            continue
        if mount.fstype in OVERLAY_TYPES:
            chosen[mount.mount_point] = mount
        else:
            chosen.pop(mount.mount_point, None)  # a pseudo fs stacked on top hides the one below
    return sorted(chosen.values(), key=lambda m: (m.mount_point.count("/"), m.mount_point))


def mount(*args: str) -> None:
    """Run mount(8) with `args`. Raises: MountError naming the command and mount's message."""
    result = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise MountError(f"`mount {' '.join(args)}` failed ({result.returncode}): {result.stderr.strip()}")


def _overlay(lower: str, upper: Path, work: Path, target: str) -> None:
    upper.mkdir()
    work.mkdir()
    mount("-t", "overlay", "-o", f"lowerdir={lower},upperdir={upper},workdir={work}", "overlay", target)


def _bind_read_only(source: str, target: str) -> None:
    mount("--bind", "-o", "ro", source, target)


def _add_host_mount(host_mount: HostMount, root: Path, stage: Path, index: int) -> None:
    mount_point = host_mount.mount_point
    target = str(root) + mount_point
    if os.path.isfile(mount_point):
        if os.path.isfile(target):  # a bind-mounted file (resolv.conf, hosts): copy its content in
            shutil.copyfile(mount_point, target)
        return
    if not os.path.isdir(target):
        log.warning("sandbox: %s has no mount point in the root; left out", mount_point)
        return
    if not any(c in mount_point for c in ",:\\"):
        try:
            _overlay(mount_point, stage / f"upper{index}", stage / f"work{index}", target)
            return
        except OSError as exc:
            log.warning("sandbox: overlay of %s failed (%s); bound read-only instead", mount_point, exc)
    _bind_read_only(mount_point, target)


def build_stage(stage: Path, size: str, mountinfo: str) -> Path:
    """Mount the env's root tree under `stage` (an empty host directory; call in a private mount
    namespace) and return its path; `stage/run` is the env's `/run`. `size`: tmpfs size of the
    writable layers, e.g. `4g` (memory is used only by what the env writes); `mountinfo`: the host's
    /proc/self/mountinfo text.

    Raises: MountError naming the mount that failed (an overlay of `/` is required).
    """
    mount("-t", "tmpfs", "-o", f"size={size},mode=700,nosuid,nodev", "tmpfs", str(stage))
    root = stage / "root"
    root.mkdir()
    _overlay("/", stage / "upper", stage / "work", str(root))
    for index, host_mount in enumerate(overlaid_mounts(parse_mountinfo(mountinfo))):
        _add_host_mount(host_mount, root, stage, index)
    (stage / "run").mkdir(mode=0o755)
    return root


def bwrap_mounts(stage: Path, home: Path, size: str) -> list[str]:
    """bubblewrap's arguments that build the env's file system from `build_stage`'s tree under `stage`
    (see the module doc): `/tmp` gets a tmpfs of `size`, `home` is bound at /home/user.

    Raises: ValueError when `size` is not a tmpfs size.
    """
    return ["--bind", str(stage / "root"), "/",
            "--proc", "/proc",
            "--dev", "/dev",
            "--perms", "1777", "--tmpfs", "/dev/shm",
            "--size", str(size_bytes(size)), "--perms", "1777", "--tmpfs", "/tmp",
            "--bind", str(stage / "run"), "/run",
            "--ro-bind", "/sys", "/sys",
            "--bind", str(home), "/home/user"]
