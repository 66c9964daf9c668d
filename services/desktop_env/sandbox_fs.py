"""The root filesystem of a sandboxed env, built inside its private mount namespace.

Layout (the host is never written through it):
- `/` and every other real host filesystem (ext4, xfs, btrfs, overlay, tmpfs, ...; pseudo and unknown
  filesystems are left out) are writable overlays: the host as the read-only lower layer, the
  env's writes in an upper layer on one tmpfs that vanishes with the env. Mount points whose path
  cannot be given to overlayfs (`,` `:` in it) or whose overlay fails are bound read-only;
  bind-mounted files (e.g. /etc/hosts in containers) are copied in;
- `/proc` (the env's PID namespace only), `/sys` (read-only, shows the env's network), a minimal
  `/dev` (null, zero, full, random, urandom, tty; own devpts and /dev/shm), a fresh `/tmp` and
  `/run`;
- `/home/user`: the env's home directory from the host, bound read-write (its files are what the
  launcher's `home(i)` shows).
Then `pivot_root` makes it `/`, and the host's tree is detached.
"""

from __future__ import annotations

import grp
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from services.desktop_env import syscalls
from services.desktop_env.syscalls import MS_BIND, MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_RDONLY, MS_REC, MS_REMOUNT

log = logging.getLogger(__name__)

#: Host trees replaced by the sandbox's own (never overlaid).
PRIVATE_TREES = ("/proc", "/sys", "/dev", "/run", "/tmp")
#: Filesystem types overlaid (others, e.g. cgroup or a tool's private mount, are left out).
OVERLAY_TYPES = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "overlay", "zfs", "f2fs", "vfat", "exfat",
                           "tmpfs", "9p", "virtiofs", "nfs", "nfs4", "squashfs", "iso9660"})
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


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


def _overlay(lower: str, upper: Path, work: Path, target: str) -> None:
    upper.mkdir()
    work.mkdir()
    syscalls.mount("overlay", target, "overlay", 0, f"lowerdir={lower},upperdir={upper},workdir={work}")


def _bind_read_only(source: str, target: str) -> None:
    syscalls.mount(source, target, None, MS_BIND)
    syscalls.mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY)


def _add_host_mount(mount: HostMount, root: Path, stage: Path, index: int) -> None:
    target = str(root) + mount.mount_point
    if os.path.isfile(mount.mount_point):
        if os.path.isfile(target):  # a bind-mounted file (resolv.conf, hosts): copy its content in
            shutil.copyfile(mount.mount_point, target)
        return
    if not os.path.isdir(target):
        log.warning("sandbox: %s has no mount point in the root; left out", mount.mount_point)
        return
    if not any(c in mount.mount_point for c in ",:\\"):
        try:
            _overlay(mount.mount_point, stage / f"upper{index}", stage / f"work{index}", target)
            return
        except OSError as exc:
            log.warning("sandbox: overlay of %s failed (%s); bound read-only instead", mount.mount_point, exc)
    _bind_read_only(mount.mount_point, target)


def _build_dev(dev: Path) -> None:
    syscalls.mount("tmpfs", str(dev), "tmpfs", MS_NOSUID, "mode=755")
    for name in DEVICES:
        (dev / name).touch()
        syscalls.mount(f"/dev/{name}", str(dev / name), None, MS_BIND)
    (dev / "pts").mkdir()
    try:
        tty_gid = f",gid={grp.getgrnam('tty').gr_gid}"
    except KeyError:
        tty_gid = ""
    syscalls.mount("devpts", str(dev / "pts"), "devpts", MS_NOSUID | MS_NOEXEC,
                   f"newinstance,ptmxmode=0666,mode=0620{tty_gid}")
    (dev / "ptmx").symlink_to("pts/ptmx")
    (dev / "shm").mkdir()
    syscalls.mount("tmpfs", str(dev / "shm"), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    (dev / "fd").symlink_to("/proc/self/fd")
    for number, name in enumerate(("stdin", "stdout", "stderr")):
        (dev / name).symlink_to(f"/proc/self/fd/{number}")


def _mount_sys(target: Path) -> None:
    try:
        syscalls.mount("sysfs", str(target), "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError as exc:
        log.warning("sandbox: fresh sysfs failed (%s); host /sys bound read-only", exc)
        _bind_read_only("/sys", str(target))


def build_root(stage: Path, home: Path, size: str, mountinfo: str) -> Path:
    """Mount the env's root under `stage` (an empty host directory, in this private mount namespace)
    and return its path. `home`: host directory bound at /home/user; `size`: tmpfs size of the
    writable layers, e.g. `4g` (memory is used only by what the env writes); `mountinfo`: the
    host's /proc/self/mountinfo text.

    Raises: OSError naming the mount that failed (an overlay of `/` is required).
    """
    syscalls.mount("tmpfs", str(stage), "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=700")
    root = stage / "root"
    root.mkdir()
    _overlay("/", stage / "upper", stage / "work", str(root))
    for index, mount in enumerate(overlaid_mounts(parse_mountinfo(mountinfo))):
        _add_host_mount(mount, root, stage, index)
    for name in ("proc", "sys", "dev", "tmp", "run"):
        (root / name).mkdir(exist_ok=True)
    _build_dev(root / "dev")
    _mount_sys(root / "sys")
    syscalls.mount("tmpfs", str(root / "tmp"), "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    syscalls.mount("tmpfs", str(root / "run"), "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=755")
    (root / "home" / "user").mkdir(parents=True, exist_ok=True)
    syscalls.mount(str(home), str(root / "home" / "user"), None, MS_BIND | MS_REC)
    return root


def enter_root(root: Path) -> None:
    """Mount /proc of the caller's PID namespace in `root`, then make `root` the caller's `/` and
    detach the host's tree. Call as PID 1 of the env's PID namespace."""
    syscalls.mount("proc", str(root / "proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    old = root / ".old-root"
    old.mkdir(exist_ok=True)
    os.chdir(root)
    syscalls.pivot_root(".", ".old-root")
    os.chdir("/")
    syscalls.umount("/.old-root", syscalls.MNT_DETACH)
    os.rmdir("/.old-root")
