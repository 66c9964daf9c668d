"""OSWorld's desktop user inside a sandbox: `user` (uid/gid 1000, home /home/user, bash), password
set by chpasswd, sudo with that password, as on OSWorld's VMs. Runs as root on the host side, on the
env's staged root tree (`sandbox_fs.build_stage`) before bubblewrap starts the env: every write lands
in the sandbox's overlay, never on the host's files. An existing account named `user` or with uid/gid
1000 in the host's files is replaced in the sandbox's copy.
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


def install_user(password: str, root: Path) -> None:
    """Create `user` with `password` and a sudo rule in the /etc of the root tree `root`.

    Raises: RuntimeError with chpasswd's message when the password cannot be set.
    """
    etc = root / "etc"
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
    result = subprocess.run(["chpasswd", "--root", str(root)], input=f"{USER}:{password}\n",
                            capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise RuntimeError(f"chpasswd failed ({result.returncode}): {result.stderr.strip()}")
    sudoers = etc / "sudoers.d"
    sudoers.mkdir(exist_ok=True)
    (sudoers / "cua-user").write_text(_SUDOERS)
    (sudoers / "cua-user").chmod(0o440)


def write_host_names(hostname: str, env_ip: str, root: Path) -> None:
    """The sandbox's /etc/hostname and /etc/hosts in the root tree `root` (localhost and the env's
    own name resolve; sudo looks its host name up)."""
    etc = root / "etc"
    (etc / "hostname").write_text(hostname + "\n")
    (etc / "hosts").write_text(f"127.0.0.1\tlocalhost\n127.0.1.1\t{hostname}\n{env_ip}\t{hostname}\n"
                               "::1\tlocalhost ip6-localhost ip6-loopback\n")


def make_reachable(paths: list[str], root: Path) -> None:
    """Give others search (x) permission on every directory leading to `paths` (host paths, e.g. the
    server's Python under /root), so the user can run it: changes their copies in the root tree
    `root`, never the host's."""
    for path in paths:
        current = Path(path).resolve()
        for directory in [current, *current.parents] if current.is_dir() else list(current.parents):
            copy = root / directory.relative_to("/")
            mode = copy.stat().st_mode
            if not mode & 0o001:
                copy.chmod((mode & 0o7777) | 0o005)


def prepare_runtime_dirs(run: Path, runtime_dir: str) -> Path:
    """In `run` (the host directory that becomes the env's /run): user/1000 (the user's
    XDG_RUNTIME_DIR, mode 700), lock (mode 1777) and `runtime_dir` (the env server's scratch
    directory, a name under /run), owned by the user; returns the XDG runtime dir as the env sees it."""
    xdg = Path("user") / str(UID)
    (run / xdg).mkdir(parents=True, mode=0o700)
    (run / "lock").mkdir(exist_ok=True)
    (run / "lock").chmod(0o1777)
    (run / runtime_dir).mkdir(mode=0o700)
    for directory in (xdg, Path(runtime_dir)):
        os.chown(run / directory, UID, GID)
    return Path("/run") / xdg


def empty_home(home: Path) -> None:
    """Delete everything in `home` (the host directory bound at /home/user; as root: files a previous
    run's `sudo` made included) and give it to the user; the env server lays out a fresh home on
    start. Symlinks are removed, never followed."""
    for entry in home.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    os.chown(home, UID, GID)
