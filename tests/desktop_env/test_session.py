"""`DesktopSession` (services/desktop_env/session.py): what a reset keeps of a private /tmp."""

from __future__ import annotations

import shutil
from pathlib import Path

from services.desktop_env import home
from services.desktop_env.session import DesktopSession
from services.desktop_env.settings import DesktopEnvSettings


def test_a_reset_that_wipes_tmp_keeps_the_sessions_own_dirs(tmp_path: Path) -> None:
    """With the default runtime dir (a fresh directory in /tmp) a reset that empties /tmp must keep it and
    the XDG runtime dir inside it: they hold the zygote's socket and log and the D-Bus socket (the
    container image once lost them at every reset). Checked on a stand-in /tmp with the same names."""
    session = DesktopSession(DesktopEnvSettings(home=tmp_path / "home", wipe_tmp=True, display=":187"))
    try:
        kept = session._kept_in_tmp()
        assert session.runtime_dir.parent == Path("/tmp") and session.runtime_dir.name in kept
        fake_tmp = tmp_path / "tmp"
        for name in (session.runtime_dir.name, ".X11-unix", "task-file.txt", "other-dir"):
            (fake_tmp / name).mkdir(parents=True) if "." not in name[1:] else (fake_tmp / name).write_text("x")
        home.wipe(fake_tmp, keep=kept)
        assert sorted(p.name for p in fake_tmp.iterdir()) == sorted([session.runtime_dir.name, ".X11-unix"])
    finally:
        shutil.rmtree(session.runtime_dir, ignore_errors=True)


def test_runtime_dirs_outside_tmp_add_nothing_to_keep(tmp_path: Path) -> None:
    session = DesktopSession(DesktopEnvSettings(home=tmp_path / "home", runtime_dir=Path("/run/desktop-env"),
                                                xdg_runtime_dir=Path("/run/user/1000"), display=":188"))
    assert set(session._kept_in_tmp()) == {".X11-unix", ".X*-lock", ".ICE-unix"}
