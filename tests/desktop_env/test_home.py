"""The env's home as OSWorld's Ubuntu VM has it where tasks read it (services/desktop_env/home.py): default
applications (VLC is not the default video player: multi_apps/937087b6), LibreOffice saving without the
keep-format dialog, the Ubuntu-named video player entry that still opens videos."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from services.desktop_env import home

#: The video types OSWorld's `default_video_player` getter asks about (desktop_env/evaluators/getters/vlc.py).
OSWORLD_VIDEO_TYPES = ("3gp", "3gpp", "3gpp2", "avi", "divx", "dv", "fli", "flv", "mp2t", "mp4", "mp4v-es", "mpeg",
                       "mpeg-system", "msvideo", "ogg", "quicktime", "vnd.divx", "vnd.mpegurl", "vnd.rn-realvideo",
                       "webm", "x-anim", "x-avi", "x-flc", "x-fli", "x-flv", "x-m4v", "x-matroska", "x-mpeg",
                       "x-mpeg-system", "x-mpeg2", "x-ms-asf", "x-ms-asf-plugin", "x-ms-asx", "x-ms-wm", "x-ms-wmv",
                       "x-ms-wmx", "x-ms-wvx", "x-msvideo", "x-nsv", "x-ogm", "x-ogm+ogg", "x-theora", "x-theora+ogg")


@pytest.mark.skipif(shutil.which("xdg-mime") is None, reason="xdg-utils is not installed")
def test_video_types_open_with_ubuntus_player_not_vlc(tmp_path: Path) -> None:
    user = tmp_path / "user"
    home.build(user, "xterm")
    env = {**os.environ, "HOME": str(user), "XDG_CONFIG_HOME": str(user / ".config"),
           "XDG_DATA_HOME": str(user / ".local" / "share"), "XDG_CURRENT_DESKTOP": ""}
    env.pop("XDG_CONFIG_DIRS", None)

    def query(mime: str) -> str:
        return subprocess.run(["xdg-mime", "query", "default", mime], env=env, capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()

    answers = Counter(query(f"video/{kind}") for kind in OSWORLD_VIDEO_TYPES)
    assert answers == {"org.gnome.Totem.desktop": len(OSWORLD_VIDEO_TYPES)}  # the system's vlc.desktop never wins
    assert query("audio/mpeg") == "vlc.desktop"
    entry = (user / ".local" / "share" / "applications" / "org.gnome.Totem.desktop").read_text()
    assert "Exec=vlc %U" in entry and "video/mp4;" in entry  # opening a video still plays it


def test_libreoffice_saves_alien_formats_without_asking(tmp_path: Path) -> None:
    home.build(tmp_path / "user", "xterm")
    prefs = (tmp_path / "user" / ".config" / "libreoffice" / "4" / "user" / "registrymodifications.xcu").read_text()
    assert '"/org.openoffice.Office.Common/Save/Document"><prop oor:name="WarnAlienFormat" oor:op="fuse">' \
        '<value>false</value>' in prefs


def test_chrome_profile_is_there_at_reset_for_setup_commands_that_edit_it(tmp_path: Path) -> None:
    """chrome/3299584d edits Preferences with jq before Chrome starts: the file must exist, as on the VM."""
    home.build(tmp_path / "user", "xterm")
    profile = tmp_path / "user" / ".config" / "google-chrome"
    prefs = json.loads((profile / "Default" / "Preferences").read_text())
    assert prefs["profile"]["exit_type"] == "Normal" and "session" not in prefs  # Chrome's default start page
    assert json.loads((profile / "Local State").read_text())["browser"]["enabled_labs_experiments"] == []
    if shutil.which("jq"):
        edit = "jq '. + {\"session\":{\"restore_on_startup\":4}}' Preferences > temp && mv temp Preferences"
        subprocess.run(edit, shell=True, cwd=profile / "Default", check=True, timeout=30)
        assert json.loads((profile / "Default" / "Preferences").read_text())["session"]["restore_on_startup"] == 4
