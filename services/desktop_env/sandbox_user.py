"""OSWorld's desktop user inside a sandbox: `user` (uid/gid 1000, home /home/user, bash), password
set by chpasswd, sudo with that password, as on OSWorld's VMs. Runs as root inside the sandbox's
root; every write lands in the sandbox's overlay, never on the host. An existing account named
`user` or with uid/gid 1000 in the host's files is replaced in the sandbox's copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

USER = "user"
UID = GID = 1000
HOME = Path("/home/user")

_SUDOERS = f"""\
# cua-rollout sandbox: OSWorld's user may sudo with its password.
Defaults:{USER} lecture=never
{USER} ALL=(ALL:ALL) ALL
"""


def _rewrite(path: Path, keep: Callable[[list[str]], bool], extra: list[str]) -> None:
    if not path.exists():
        return
    lines = [line for line in path.read_text().splitlines() if line and keep(line.split(":"))]
    mode = path.stat().st_mode & 0o7777
    path.write_text("\n".join(lines + extra) + "\n")
    path.chmod(mode)


def _add_to_group(fields: list[str], group: str) -> list[str]:
    if fields[0] == group and len(fields) >= 4:
        members = [m for m in fields[3].split(",") if m]
        fields = [*fields[:3], ",".join([*members, USER])]
    return fields


def install_user(password: str, etc: Path = Path("/etc")) -> None:
    """Create `user` with `password` and a sudo rule in `etc` (the sandbox's /etc).

    Raises: RuntimeError with chpasswd's message when the password cannot be set.
    """
    def not_ours(fields: list[str]) -> bool:
        return fields[0] != USER and (len(fields) < 3 or fields[2] != str(UID))

    _rewrite(etc / "passwd", not_ours, [f"{USER}:x:{UID}:{GID}:{USER}:{HOME}:/bin/bash"])
    group_lines = []
    if (etc / "group").exists():
        for line in (etc / "group").read_text().splitlines():
            fields = line.split(":")
            if line and fields[0] != USER and (len(fields) < 3 or fields[2] != str(GID)):
                group_lines.append(":".join(_add_to_group(fields, "sudo")))
        (etc / "group").write_text("\n".join([*group_lines, f"{USER}:x:{GID}:"]) + "\n")
    _rewrite(etc / "shadow", lambda f: f[0] != USER, [f"{USER}:!:19000:0:99999:7:::"])
    _rewrite(etc / "gshadow", lambda f: f[0] != USER, [f"{USER}:!::"])
    if etc == Path("/etc"):
        result = subprocess.run(["chpasswd"], input=f"{USER}:{password}\n", capture_output=True, text=True,
                                timeout=30)
        if result.returncode != 0:
            raise RuntimeError(f"chpasswd failed ({result.returncode}): {result.stderr.strip()}")
    sudoers = etc / "sudoers.d"
    sudoers.mkdir(exist_ok=True)
    (sudoers / "cua-user").write_text(_SUDOERS)
    (sudoers / "cua-user").chmod(0o440)


def write_host_names(hostname: str, env_ip: str, etc: Path = Path("/etc")) -> None:
    """The sandbox's /etc/hostname and /etc/hosts (localhost and the env's own name resolve; sudo
    looks its host name up)."""
    (etc / "hostname").write_text(hostname + "\n")
    (etc / "hosts").write_text(f"127.0.0.1\tlocalhost\n127.0.1.1\t{hostname}\n{env_ip}\t{hostname}\n"
                               "::1\tlocalhost ip6-localhost ip6-loopback\n")


def make_reachable(paths: list[str]) -> None:
    """Give others search (x) permission on every directory leading to `paths` (e.g. the server's
    Python under /root), so the user can run it. Only the sandbox's overlay copy changes."""
    for path in paths:
        current = Path(path).resolve()
        for directory in [current, *current.parents] if current.is_dir() else list(current.parents):
            mode = directory.stat().st_mode
            if not mode & 0o001:
                directory.chmod((mode & 0o7777) | 0o005)


def prepare_runtime_dirs(runtime_dir: Path) -> Path:
    """Create /run/user/1000 (the user's XDG_RUNTIME_DIR, mode 700), /run/lock and `runtime_dir`
    (the env server's scratch directory), owned by the user; returns the XDG runtime dir."""
    xdg = Path(f"/run/user/{UID}")
    xdg.mkdir(parents=True, mode=0o700)
    Path("/run/lock").mkdir(mode=0o1777, exist_ok=True)
    Path("/run/lock").chmod(0o1777)
    runtime_dir.mkdir(parents=True, mode=0o700, exist_ok=True)
    for directory in (xdg.parent, xdg, runtime_dir):
        os.chown(directory, UID if directory != xdg.parent else 0, GID if directory != xdg.parent else 0)
    return xdg


def empty_home() -> None:
    """Delete everything in /home/user (as root: files a previous run's `sudo` made included) and
    give it to the user; the env server lays out a fresh home on start."""
    for entry in HOME.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    os.chown(HOME, UID, GID)


def become_user() -> None:
    """Drop to `user` for good (groups, gid, uid; no way back to root but sudo)."""
    os.setgroups([GID])
    os.setgid(GID)
    os.setuid(UID)
