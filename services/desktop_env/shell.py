"""The desktop shell of a session: GNOME Shell with Ubuntu's dock, as on OSWorld's Ubuntu 22.04 VM, or
openbox alone (a bare root window) where GNOME Shell is not installed.

GNOME Shell runs on X11 (`gnome-shell --x11 --replace`, mutter as the window manager, llvmpipe for
its compositing: `LIBGL_ALWAYS_SOFTWARE=1`) without systemd or a display manager: it needs a system
bus (its login manager code dies without one), so each env runs a private `dbus-daemon` of its own as
its system bus (`DBUS_SYSTEM_BUS_ADDRESS`; no system service lives there, the shell's calls to
logind, polkit, NetworkManager fail and it goes on without them). Its settings (Ubuntu's dock from
`dash-to-dock`, the Yaru theme, animations off, no overview at start) are GSettings defaults of the
env (`ubuntu_defaults`). Its state survives a reset, so `reset_shell` closes the overview and puts back
the settings a task changed (favourite apps, theme, dock).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from common.pixels import is_drawn
from services.desktop_env import screen

log = logging.getLogger(__name__)

ShellName = Literal["gnome", "openbox"]
GNOME: ShellName = "gnome"
OPENBOX: ShellName = "openbox"
DASH_TO_DOCK = Path("/usr/share/gnome-shell/extensions/dash-to-dock@micxgx.gmail.com")

#: Schemas whose user values `reset_shell` clears (the rest of dconf goes with the home).
SHELL_SCHEMAS = ("org.gnome.shell", "org.gnome.shell.extensions.dash-to-dock", "org.gnome.desktop.interface",
                 "org.gnome.desktop.background", "org.gnome.desktop.wm.preferences", "org.gnome.mutter")

_SYSTEM_BUS_CONFIG = """\
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""


def default_shell() -> ShellName:
    """`gnome` when GNOME Shell and the dock extension are installed, else `openbox`."""
    return GNOME if shutil.which("gnome-shell") and DASH_TO_DOCK.is_dir() else OPENBOX


def system_bus_argv(runtime_dir: Path) -> tuple[list[str], Path]:
    """The argv of the env's private system bus and its socket path (the config is written to
    `runtime_dir/system-bus.conf`)."""
    socket = runtime_dir / "system_bus_socket"
    config = runtime_dir / "system-bus.conf"
    config.write_text(_SYSTEM_BUS_CONFIG.format(socket=socket))
    return ["dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile"], socket


#: The desktop names of Ubuntu 22.04's GNOME session, which every process of a session there has (GNOME Shell, apps
#: from the dock, and the env's commands), with gnome-session's GNOME_DESKTOP_SESSION_ID ("this-is-deprecated",
#: which it still sets). xdg-open then opens files as on Ubuntu, with `gio open`, whose MIME subclasses send JSON
#: to the text editor: Debian's xdg-open does not read "ubuntu:GNOME" and there is no gnome-session here to ask,
#: so without that variable it took its generic path, which sent JSON to the browser.
UBUNTU_SESSION_VARS = {"XDG_CURRENT_DESKTOP": "ubuntu:GNOME", "XDG_SESSION_DESKTOP": "ubuntu",
                       "XDG_SESSION_TYPE": "x11", "DESKTOP_SESSION": "ubuntu",
                       "GNOME_DESKTOP_SESSION_ID": "this-is-deprecated"}


def gnome_shell_env(env: Mapping[str, str], system_bus: Path) -> dict[str, str]:
    """The environment of GNOME Shell: the session's, with the private system bus, software GL, and
    the desktop names of Ubuntu's GNOME session (`UBUNTU_SESSION_VARS`)."""
    env = {key: value for key, value in env.items() if key != "GTK_MODULES"}  # it loads its own AT-SPI bridge
    return {**env, "DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={system_bus}", "LIBGL_ALWAYS_SOFTWARE": "1",
            **UBUNTU_SESSION_VARS}


GNOME_SHELL_ARGV = ["gnome-shell", "--x11", "--replace"]


def _dbus(env: Mapping[str, str], *args: str, timeout_s: float = 5.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["dbus-send", "--session", "--print-reply", *args], env=dict(env), capture_output=True,
                          text=True, timeout=timeout_s, check=False)


TOP_BAR_PX = 32
"""Height of GNOME Shell's top bar (pixels, at scale 1)."""


def gnome_shell_ready(env: Mapping[str, str], display: str, width: int) -> bool:
    """True once GNOME Shell owns `org.gnome.Shell` on the session bus of `env` and has drawn its top bar
    (the clock, Activities: `common.pixels.is_drawn`) on `display` (`width` pixels wide): it takes the name
    seconds before its first frame, and a black screen is not a desktop."""
    try:
        result = _dbus(env, "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                       "org.freedesktop.DBus.NameHasOwner", "string:org.gnome.Shell", timeout_s=2.0)
    except subprocess.TimeoutExpired:
        return False
    if result.returncode != 0 or "boolean true" not in result.stdout:
        return False
    return is_drawn(screen.grab(display, (0, 0, width, TOP_BAR_PX)))


#: Run by Debian's python3 (PyGObject): resets every key of the schemas in argv that has a user value,
#: through dconf's writer, so GNOME Shell gets the change signals (one process: `gsettings` per schema
#: costs a process and a dconf round trip each).
_RESET_SCRIPT = """
import sys
from gi.repository import Gio
source = Gio.SettingsSchemaSource.get_default()
for schema_id in sys.argv[1:]:
    schema = source.lookup(schema_id, True)
    if schema is None:
        continue
    settings = Gio.Settings.new(schema_id)
    for key in schema.list_keys():
        if settings.get_user_value(key) is not None:
            settings.reset(key)
Gio.Settings.sync()
"""


def reset_shell(env: Mapping[str, str], dconf_db: Path) -> None:
    """Bring GNOME Shell back to its start state: the overview closed, and when the user's dconf
    database exists (something wrote a setting), the settings of `SHELL_SCHEMAS` a task changed back
    to the env's defaults (`_RESET_SCRIPT`). Failures are logged (a reset goes on)."""
    try:
        _dbus(env, "--dest=org.gnome.Shell", "/org/gnome/Shell", "org.freedesktop.DBus.Properties.Set",
              "string:org.gnome.Shell", "string:OverviewActive", "variant:boolean:false")
        if dconf_db.exists():
            result = subprocess.run(["/usr/bin/python3", "-c", _RESET_SCRIPT, *SHELL_SCHEMAS], env=dict(env),
                                    capture_output=True, text=True, timeout=15, check=False)
            if result.returncode != 0:
                log.warning("resetting GNOME Shell's settings failed: %s", result.stderr[-500:])
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("resetting GNOME Shell failed: %s", exc)


#: Width of Ubuntu's dock on the left (pixels, 48 px icons) and the longest `wait_panels_still` waits (s).
DOCK_PX = 70
PANELS_STILL_MAX_S = 1.5


def wait_panels_still(display: str, width: int, height: int, interval_s: float = 0.2) -> bool:
    """Wait until the top bar and the dock look the same in two grabs `interval_s` apart (after a reset, GNOME
    Shell takes the closed apps off the dock and the top bar a moment later); at most `PANELS_STILL_MAX_S`.
    True when they settled."""
    regions = ((0, 0, width, TOP_BAR_PX), (0, TOP_BAR_PX, DOCK_PX, height - TOP_BAR_PX))
    deadline = time.monotonic() + PANELS_STILL_MAX_S
    last = [screen.grab(display, region).tobytes() for region in regions]
    while time.monotonic() < deadline:
        time.sleep(interval_s)
        now = [screen.grab(display, region).tobytes() for region in regions]
        if now == last:
            return True
        last = now
    return False
