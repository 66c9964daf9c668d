"""The env's home directory: wiped and rebuilt on start and on every reset.

Layout (like OSWorld's Ubuntu user): the XDG user folders (Desktop, Documents, Downloads, ...),
`.bashrc` with an Ubuntu-like prompt, `.config/mimeapps.list` so `xdg-open` picks Ubuntu 22.04's apps: gedit
for text, Nautilus for folders, Evince for PDFs, LibreOffice, Chromium, VLC (audio) and GIMP, and Ubuntu's video
player for videos (an entry named as GNOME Videos that runs VLC: VLC is not the default video player, as on
OSWorld's VM),
`.config/vlc/vlcrc` with VLC's HTTP interface on,
a LibreOffice profile without first-run dialogs, Chrome's profile (`.config/google-chrome`, present at reset
as on the VM), VS Code's empty `.config/Code/User`, and
`.config/openbox/rc.xml` binding ctrl+alt+t to the terminal, GTK 3's settings for the Yaru look.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import logging
import re
import shutil
import subprocess
import time
from pathlib import Path
from xml.sax.saxutils import escape

log = logging.getLogger(__name__)

USER_DIRS = ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Public", "Templates", "Videos")

_BASHRC = """\
# cua-rollout desktop env: an Ubuntu-like prompt; the window title stays "Terminal".
PS1='\\u@\\h:\\w\\$ '
alias ls='ls --color=auto'
"""

_MIMEAPPS = """\
[Default Applications]
inode/directory=org.gnome.Nautilus.desktop
text/plain=org.gnome.gedit.desktop
text/csv=libreoffice-calc.desktop
application/vnd.openxmlformats-officedocument.spreadsheetml.sheet=libreoffice-calc.desktop
application/vnd.oasis.opendocument.spreadsheet=libreoffice-calc.desktop
application/vnd.ms-excel=libreoffice-calc.desktop
application/vnd.openxmlformats-officedocument.wordprocessingml.document=libreoffice-writer.desktop
application/vnd.oasis.opendocument.text=libreoffice-writer.desktop
application/msword=libreoffice-writer.desktop
application/vnd.openxmlformats-officedocument.presentationml.presentation=libreoffice-impress.desktop
application/vnd.oasis.opendocument.presentation=libreoffice-impress.desktop
application/vnd.ms-powerpoint=libreoffice-impress.desktop
text/html=chromium.desktop
x-scheme-handler/http=chromium.desktop
x-scheme-handler/https=chromium.desktop
audio/mpeg=vlc.desktop
audio/x-wav=vlc.desktop
image/png=gimp.desktop
image/jpeg=gimp.desktop
application/pdf=org.gnome.Evince.desktop
{videos}"""

# Video types Ubuntu 22.04 opens with its Videos app (Totem: the MimeType list of its desktop file, which covers
# every `video/<type>` OSWorld's `default_video_player` getter asks xdg-mime about). As on the VM, VLC is not
# the default video player until the user makes it one (multi_apps/937087b6 asks for that).
VIDEO_TYPES = (
    "3gp", "3gpp", "3gpp2", "avi", "divx", "dv", "fli", "flv", "mp2t", "mp4", "mp4v-es", "mpeg", "mpeg-system",
    "msvideo", "ogg", "quicktime", "vivo", "vnd.divx", "vnd.mpegurl", "vnd.rn-realvideo", "vnd.vivo", "webm",
    "x-anim", "x-avi", "x-flc", "x-fli", "x-flic", "x-flv", "x-m4v", "x-matroska", "x-mjpeg", "x-mpeg",
    "x-mpeg-system", "x-mpeg2", "x-ms-asf", "x-ms-asf-plugin", "x-ms-asx", "x-ms-wm", "x-ms-wmv", "x-ms-wmx",
    "x-ms-wvx", "x-msvideo", "x-nsv", "x-ogm", "x-ogm+ogg", "x-theora", "x-theora+ogg",
)
UBUNTU_VIDEO_PLAYER = "org.gnome.Totem.desktop"
# The env has no Totem: its desktop entry (Ubuntu's name, "Videos") plays files with VLC, so opening a video
# still works, while `xdg-mime query default video/mp4` answers as on Ubuntu.
_VIDEO_PLAYER_ENTRY = """\
[Desktop Entry]
Type=Application
Name=Videos
Comment=Play movies (the env's stand-in for GNOME Videos: runs VLC)
Exec=vlc %U
Icon=org.gnome.Totem
Terminal=false
Categories=AudioVideo;Player;Video;
MimeType={mime_types}
"""


# Chrome's profile as on OSWorld's VM, where Chrome ran before: present at reset, so a task's setup that edits
# it before starting Chrome (chrome/3299584d, 9656a811: `jq` on Default/Preferences) edits a real file; Chromium
# fills in every key it does not find. `--user-data-dir` of the `google-chrome` shim (shims.py).
CHROME_PREFERENCES = {
    "browser": {"has_seen_welcome_page": True, "check_default_browser": False},
    "profile": {"name": "Person 1", "exit_type": "Normal", "exited_cleanly": True},
}
CHROME_LOCAL_STATE: dict[str, dict[str, list[str]]] = {"browser": {"enabled_labs_experiments": []}}


def write_chrome_profile(home: Path) -> None:
    """Lay out `~/.config/google-chrome` with `Default/Preferences`, `Local State` and `First Run`."""
    user_data = home / ".config" / "google-chrome"
    (user_data / "Default").mkdir(parents=True, exist_ok=True)
    (user_data / "Default" / "Preferences").write_text(json.dumps(CHROME_PREFERENCES))
    (user_data / "Local State").write_text(json.dumps(CHROME_LOCAL_STATE))
    (user_data / "First Run").write_text("")


def mimeapps_list() -> str:
    """Text of the home's `.config/mimeapps.list`: the env's apps per type, videos to Ubuntu's player."""
    return _MIMEAPPS.format(videos="".join(f"video/{kind}={UBUNTU_VIDEO_PLAYER}\n" for kind in VIDEO_TYPES))

_NO_INDEXER = ("org.freedesktop.Tracker3.Miner.Files", "org.freedesktop.Tracker3.Miner.Extract",
               "org.gnome.Nautilus.Tracker3.Miner.Files", "org.gnome.Nautilus.Tracker3.Miner.Extract")

# Ubuntu's look for GTK 3 apps (Yaru theme, icons and cursor), which read it here when no settings daemon
# runs (on Ubuntu gnome-settings-daemon hands them the same GSettings values); no animations.
_GTK_SETTINGS = """\
[Settings]
gtk-theme-name=Yaru
gtk-icon-theme-name=Yaru
gtk-cursor-theme-name=Yaru
gtk-enable-animations=false
"""

# VLC's HTTP interface on (port 8080, password "password"), as on OSWorld's VMs: its VLC getters read
# `http://<env host>:8080/requests/status.xml`.
_VLCRC = """\
[core]
extraintf=http
http-port=8080
[lua]
http-password=password
[qt]
qt-privacy-ask=0
"""

# Openbox replaces its built-in bindings with these: ctrl+alt+t opens the terminal (OSWorld's Ubuntu
# shortcut), plus the usual focus/move/resize mouse bindings so windows react to clicks.
_RC_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse></focus>
  <placement><policy>Smart</policy><center>yes</center></placement>
  <desktops><number>1</number></desktops>
  <keyboard>
    <keybind key="C-A-t"><action name="Execute"><command>{terminal}</command></action></keybind>
    <keybind key="A-F4"><action name="Close"/></keybind>
    <keybind key="A-Tab"><action name="NextWindow"/></keybind>
  </keyboard>
  <mouse>
    <dragThreshold>3</dragThreshold>
    <doubleClickTime>300</doubleClickTime>
    <context name="Frame">
      <mousebind button="A-Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="A-Left" action="Drag"><action name="Move"/></mousebind>
    </context>
    <context name="Titlebar">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Left" action="Drag"><action name="Move"/></mousebind>
      <mousebind button="Left" action="DoubleClick"><action name="ToggleMaximize"/></mousebind>
    </context>
    <context name="Client">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Middle" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Right" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
    </context>
    {resize}
    <context name="Close"><mousebind button="Left" action="Click"><action name="Close"/></mousebind></context>
    <context name="Maximize">
      <mousebind button="Left" action="Click"><action name="ToggleMaximize"/></mousebind>
    </context>
    <context name="Iconify"><mousebind button="Left" action="Click"><action name="Iconify"/></mousebind></context>
  </mouse>
</openbox_config>
"""

# LibreOffice as on a desktop where it ran before: no "Tip of the Day" dialog stealing the keyboard
# focus from the document, no first-run / "what's new" bar (the version is the installed one); and as on
# OSWorld's VM, ctrl+s keeps a document's format (xlsx, docx, pptx, csv) without the "Keep current format"
# dialog (WarnAlienFormat off): the tasks' postconfig `ctrl+s` saves.
_LIBREOFFICE_PREFS = """\
<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" \
xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse">\
<value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse">\
<value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Save/Document"><prop oor:name="WarnAlienFormat" oor:op="fuse">\
<value>false</value></prop></item>
{version}</oor:items>
"""
_LIBREOFFICE_VERSION_ITEM = (
    '<item oor:path="/org.openoffice.Setup/Product"><prop oor:name="ooSetupLastVersion" oor:op="fuse">'
    "<value>{version}</value></prop></item>\n")


@functools.cache
def libreoffice_version() -> str | None:
    """`major.minor` of the installed LibreOffice (Debian package libreoffice-core), None when absent."""
    try:
        result = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libreoffice-core"], capture_output=True,
                                text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"(?:\d+:)?(\d+\.\d+)", result.stdout) if result.returncode == 0 else None
    return match.group(1) if match else None


def libreoffice_prefs() -> str:
    """Text of the LibreOffice profile's `registrymodifications.xcu` (see `_LIBREOFFICE_PREFS`)."""
    version = libreoffice_version()
    return _LIBREOFFICE_PREFS.format(version=_LIBREOFFICE_VERSION_ITEM.format(version=version) if version else "")


_RESIZE_CONTEXTS = ("Top", "Bottom", "Left", "Right", "TLCorner", "TRCorner", "BLCorner", "BRCorner")


def openbox_config(terminal_command: str) -> str:
    """Text of the env's openbox `rc.xml`, ctrl+alt+t running `terminal_command`."""
    resize = "\n    ".join(
        f'<context name="{name}"><mousebind button="Left" action="Drag"><action name="Resize"/></mousebind></context>'
        for name in _RESIZE_CONTEXTS
    )
    return _RC_XML.format(terminal=escape(terminal_command), resize=resize)


def _check_safe(directory: Path) -> None:
    # Wiping is recursive: refuse paths like `/` or `/home` that are surely not a user's home.
    if len(directory.resolve().parts) < 3 and directory.resolve() != Path("/tmp"):
        raise ValueError(f"refusing to wipe {directory} (too close to /)")


def _sudo_remove(entry: Path, password: str) -> bool:
    """`sudo -S rm -rf entry` with `password` on stdin (a file a task made with sudo); True when gone."""
    if not shutil.which("sudo"):
        return False
    try:
        subprocess.run(["sudo", "-S", "-p", "", "rm", "-rf", "--", str(entry)], input=f"{password}\n".encode(),
                       capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False
    return not entry.exists() and not entry.is_symlink()


def wipe(directory: Path, password: str = "", keep: tuple[str, ...] = ()) -> None:
    """Delete everything inside `directory` except entries matching a glob of `keep` (the directory
    itself stays, so processes whose cwd it is keep a valid cwd). What we may not delete (made by a
    task's `sudo`) is removed with `sudo -S` and `password`; what still resists is logged and left."""
    _check_safe(directory)
    if not directory.exists():
        return
    for entry in directory.iterdir():
        if any(fnmatch.fnmatch(entry.name, pattern) for pattern in keep):
            continue
        try:
            _remove(entry)
        except PermissionError:
            if not _sudo_remove(entry, password):
                log.warning("could not delete %s from %s", entry, directory)
        except OSError as exc:
            log.warning("could not delete %s from %s: %s", entry, directory, exc)


def _remove(entry: Path, attempts: int = 5) -> None:
    """Delete a file or tree. A process that is still exiting (a browser flushing its profile when
    reset stopped it) may add files meanwhile: retried a few times, 0.1 s apart."""
    for attempt in range(attempts):
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            return
        except FileNotFoundError:
            return
        except PermissionError:
            raise
        except OSError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.1)


def build(home: Path, terminal_command: str, password: str = "") -> None:
    """Wipe `home` (`password`: for `sudo -S`, see `wipe`) and lay out a fresh one (see module doc)."""
    wipe(home, password)
    home.mkdir(parents=True, exist_ok=True)
    for name in USER_DIRS:
        (home / name).mkdir(exist_ok=True)
    (home / ".bashrc").write_text(_BASHRC)
    config = home / ".config"
    (config / "openbox").mkdir(parents=True, exist_ok=True)
    (config / "openbox" / "rc.xml").write_text(openbox_config(terminal_command))
    (config / "mimeapps.list").write_text(mimeapps_list())
    (config / "gtk-3.0").mkdir(exist_ok=True)
    (config / "gtk-3.0" / "settings.ini").write_text(_GTK_SETTINGS)
    # GNOME Shell's "Screen Lock disabled" notice (no display manager here) is shown once per user: as
    # shown already, as on the VM, where GDM runs and there is no notice
    (home / ".local" / "share" / "gnome-shell").mkdir(parents=True, exist_ok=True)
    (home / ".local" / "share" / "gnome-shell" / "lock-warning-shown").write_text("")
    # No file indexer: Nautilus would have the session bus start Tracker's miner, which crawls the home (CPU in
    # every env) and whose start a reset could cut; a user service of the same name shadows the system's
    services = home / ".local" / "share" / "dbus-1" / "services"
    services.mkdir(parents=True, exist_ok=True)
    for name in _NO_INDEXER:
        (services / f"{name}.service").write_text(f"[D-BUS Service]\nName={name}\nExec=/bin/false\n")
    applications = home / ".local" / "share" / "applications"
    applications.mkdir(parents=True, exist_ok=True)
    (applications / UBUNTU_VIDEO_PLAYER).write_text(
        _VIDEO_PLAYER_ENTRY.format(mime_types="".join(f"video/{kind};" for kind in VIDEO_TYPES)))
    (config / "vlc").mkdir(exist_ok=True)
    (config / "vlc" / "vlcrc").write_text(_VLCRC)
    # VS Code's user settings folder, present on OSWorld's VM: tasks write settings.json into it
    # before they start VS Code (vs_code/982d12a5)
    (config / "Code" / "User").mkdir(parents=True, exist_ok=True)
    write_chrome_profile(home)
    libreoffice = config / "libreoffice" / "4" / "user"
    libreoffice.mkdir(parents=True, exist_ok=True)
    (libreoffice / "registrymodifications.xcu").write_text(libreoffice_prefs())
