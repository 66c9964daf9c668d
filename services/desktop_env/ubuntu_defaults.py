"""GSettings defaults of Ubuntu 22.04 (OSWorld's VM) for one env, where its tasks read them.

Debian's schemas default the wallpaper to a GNOME image the env does not ship, so `GET /wallpaper` (OSWorld's
`vm_wallpaper` getter) found no file and image checkers could not score a do-nothing agent (multi_apps/
c2751594). Each env compiles the system's schemas with an override of Ubuntu's defaults into
`<runtime dir>/schemas` and points `GSETTINGS_SCHEMA_DIR` at it (so a reset, which clears the user's dconf
values, comes back to these): the wallpaper (an image standing in for Ubuntu's `warty-final-ubuntu.png`,
written beside the schemas) and GNOME Shell's favourite apps (Ubuntu 22.04's `ubuntu-settings` list).
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


def override_text(wallpaper: Path) -> str:
    """The gschema override of Ubuntu's defaults (wallpaper at `wallpaper`, favourite apps)."""
    favorites = ", ".join(f"'{name}'" for name in UBUNTU_FAVORITES)
    uri = wallpaper.as_uri()
    return (f"[org.gnome.desktop.background]\npicture-uri='{uri}'\npicture-uri-dark='{uri}'\n\n"
            f"[org.gnome.desktop.screensaver]\npicture-uri='{uri}'\n\n"
            f"[org.gnome.shell]\nfavorite-apps=[{favorites}]\n")


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
    known = {path.name for path in target.glob("*.gschema.xml")}
    text = override_text(wallpaper)
    if "org.gnome.shell.gschema.xml" not in known:  # an override of a missing schema fails the compile
        text = text.split("[org.gnome.shell]")[0]
    (target / "zz_cua_ubuntu.gschema.override").write_text(text)
    result = subprocess.run([compiler, str(target)], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        log.warning("glib-compile-schemas failed (%s): Ubuntu's defaults are not applied", result.stderr.strip())
        return None
    return target
