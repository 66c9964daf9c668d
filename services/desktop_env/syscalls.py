"""Thin ctypes wrappers of the Linux calls the sandbox needs and Python 3.11's `os` lacks: unshare,
setns, mount, umount2, pivot_root, sethostname (prctl PR_SET_PDEATHSIG: `common.processes.die_with_parent`).

Each raises OSError(errno, "<call> <args>: <strerror>") on failure. Linux only (x86_64 / aarch64
syscall numbers for pivot_root, which glibc does not wrap).
"""

from __future__ import annotations

import ctypes
import os
import platform

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    """unshare(2) with `CLONE_*` flags."""
    _check(_libc.unshare(ctypes.c_int(flags)), f"unshare({flags:#x})")


def setns(path: str, nstype: int) -> None:
    """Join the namespace at `path` (e.g. `/run/netns/NAME`, `/proc/PID/ns/net`)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), f"setns({path})")
    finally:
        os.close(fd)


def mount(source: str | None, target: str, fstype: str | None = None, flags: int = 0,
          data: str | None = None) -> None:
    """mount(2). `data` is the comma-separated option string of `fstype`."""
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    result = _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    _check(result, f"mount({source!r} -> {target!r}, type {fstype!r}, flags {flags:#x}, {data!r})")


def umount(target: str, flags: int = 0) -> None:
    """umount2(2)."""
    _check(_libc.umount2(os.fsencode(target), ctypes.c_int(flags)), f"umount2({target!r})")


def pivot_root(new_root: str, put_old: str) -> None:
    """pivot_root(2): `new_root` (a mount point) becomes `/`, the old root moves to `put_old`."""
    number = _SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(38, f"pivot_root: unsupported architecture {platform.machine()}")
    _check(_libc.syscall(ctypes.c_long(number), os.fsencode(new_root), os.fsencode(put_old)),
           f"pivot_root({new_root!r}, {put_old!r})")


def sethostname(name: str) -> None:
    """sethostname(2) (in the caller's UTS namespace)."""
    raw = name.encode()
    _check(_libc.sethostname(raw, ctypes.c_size_t(len(raw))), f"sethostname({name!r})")

