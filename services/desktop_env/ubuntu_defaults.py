"""GSettings defaults of Ubuntu 22.04 (OSWorld's VM) for one env, where its tasks read them.

Debian's schemas default the wallpaper to a GNOME image the env does not ship, so `GET /wallpaper` (OSWorld's
`vm_wallpaper` getter) found no file and image checkers could not score a do-nothing agent (multi_apps/
c2751594). Each env compiles the system's schemas with an override of Ubuntu's defaults into
`<runtime dir>/schemas` and points `GSETTINGS_SCHEMA_DIR` at it (so a reset, which clears the user's dconf
values, comes back to these): the wallpaper (an image standing in for Ubuntu's `warty-final-ubuntu.png`,
written beside the schemas), GNOME Shell's favourite apps (Ubuntu 22.04's `ubuntu-settings` list), and
the look of Ubuntu's session (`ubuntu-settings` and `ubuntu-dock`): the dock (Debian's `dash-to-dock`,
which Ubuntu's dock is a fork of) fixed on the left at full height with 48 px icons and no overview at
start, the Yaru theme and icons, Ubuntu's title-bar buttons; animations off (a screenshot never shows
a half-drawn transition). A section of a schema the system does not have is left out.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

SYSTEM_SCHEMAS = Path("/usr/share/glib-2.0/schemas")
WALLPAPER_NAME = "warty-final-ubuntu.png"
#: Ubuntu 22.04's dock (ubuntu-settings' gschema override of org.gnome.shell favorite-apps).
UBUNTU_FAVORITES = ("firefox_firefox.desktop", "thunderbird.desktop", "org.gnome.Nautilus.desktop",
                    "rhythmbox.desktop", "libreoffice-writer.desktop", "snap-store_ubuntu-software.desktop",
                    "yelp.desktop")


def wallpaper_png(width: int = 1920, height: int = 1080) -> bytes:
    """An Ubuntu-like wallpaper: a vertical aubergine-to-orange gradient (PNG bytes)."""
    import io

    from PIL import Image

    top, bottom = (44, 0, 30), (233, 84, 32)
    column = Image.new("RGB", (1, height))
    for y in range(height):
        t = y / max(1, height - 1)
        column.putpixel((0, y), tuple(round(a + (b - a) * t) for a, b in zip(top, bottom, strict=True)))
    out = io.BytesIO()
    column.resize((width, height)).save(out, format="PNG")
    return out.getvalue()


#: Ubuntu 22.04's dock (ubuntu-dock's gschema override) as dash-to-dock settings, animations off.
DOCK = {"dock-position": "'LEFT'", "dock-fixed": "true", "extend-height": "true", "dash-max-icon-size": "48",
        "show-trash": "true", "show-mounts": "true", "custom-theme-shrink": "true", "transparency-mode": "'FIXED'",
        "background-opacity": "1.0", "running-indicator-style": "'DOTS'", "show-apps-at-top": "false",
        "disable-overview-on-startup": "true", "animate-show-apps": "false", "hot-keys": "false"}
INTERFACE = {"gtk-theme": "'Yaru'", "icon-theme": "'Yaru'", "cursor-theme": "'Yaru'", "enable-animations": "false",
             "clock-show-date": "true"}


def override_sections(wallpaper: Path) -> dict[str, dict[str, str]]:
    """Schema id -> key -> GVariant text of Ubuntu's defaults (wallpaper at `wallpaper`)."""
    uri = wallpaper.as_uri()
    return {
        "org.gnome.desktop.background": {"picture-uri": f"'{uri}'", "picture-uri-dark": f"'{uri}'"},
        "org.gnome.desktop.screensaver": {"picture-uri": f"'{uri}'"},
        "org.gnome.shell": {"favorite-apps": "[" + ", ".join(f"'{name}'" for name in UBUNTU_FAVORITES) + "]",
                            "enabled-extensions": "['dash-to-dock@micxgx.gmail.com']",
                            "welcome-dialog-last-shown-version": "'999'"},
        "org.gnome.shell.extensions.dash-to-dock": DOCK,
        "org.gnome.desktop.interface": INTERFACE,
        "org.gnome.desktop.wm.preferences": {"button-layout": "':minimize,maximize,close'"},
    }


def override_text(wallpaper: Path, known: set[str] | None = None) -> str:
    """The gschema override of Ubuntu's defaults, only the sections of schema ids in `known` (None: all)."""
    return "\n".join(f"[{schema}]\n" + "".join(f"{key}={value}\n" for key, value in keys.items())
                     for schema, keys in override_sections(wallpaper).items() if known is None or schema in known)


def install(runtime_dir: Path, system_schemas: Path = SYSTEM_SCHEMAS) -> Path | None:
    """Write the wallpaper and compile the schemas with Ubuntu's override into `runtime_dir/schemas`;
    returns that directory, or None (logged) when the system has no schemas or no `glib-compile-schemas`."""
    compiler = shutil.which("glib-compile-schemas")
    if compiler is None or not system_schemas.is_dir():
        log.warning("no GSettings schemas or glib-compile-schemas: Ubuntu's defaults are not applied")
        return None
    target = runtime_dir / "schemas"
    target.mkdir(parents=True, exist_ok=True)
    wallpaper = runtime_dir / "backgrounds" / WALLPAPER_NAME
    wallpaper.parent.mkdir(parents=True, exist_ok=True)
    wallpaper.write_bytes(wallpaper_png())
    for source in system_schemas.iterdir():
        if source.suffix in (".xml", ".override"):
            shutil.copyfile(source, target / source.name)
    # an override of a missing schema fails the compile
    known = {path.name.removesuffix(".gschema.xml") for path in target.glob("*.gschema.xml")}
    (target / "zz_cua_ubuntu.gschema.override").write_text(override_text(wallpaper, known))
    result = subprocess.run([compiler, str(target)], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        log.warning("glib-compile-schemas failed (%s): Ubuntu's defaults are not applied", result.stderr.strip())
        return None
    return target
