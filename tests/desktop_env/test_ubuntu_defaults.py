"""Ubuntu 22.04's GSettings defaults in an env (services/desktop_env/ubuntu_defaults.py): the wallpaper is an
image that exists (OSWorld's `vm_wallpaper` getter reads it), GNOME Shell's favourites are Ubuntu's; read
with the real `gsettings` against the compiled schemas (memory backend: no dconf state)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from services.desktop_env import ubuntu_defaults

pytestmark = pytest.mark.skipif(shutil.which("gsettings") is None or shutil.which("glib-compile-schemas") is None,
                                reason="GLib's gsettings tools are not installed")


def _get(schemas: Path, schema: str, key: str) -> str:
    env = {**os.environ, "GSETTINGS_SCHEMA_DIR": str(schemas), "GSETTINGS_BACKEND": "memory"}
    return subprocess.run(["gsettings", "get", schema, key], env=env, capture_output=True, text=True, check=True,
                          timeout=30).stdout.strip()


def test_wallpaper_default_is_an_image_that_exists(tmp_path: Path) -> None:
    schemas = ubuntu_defaults.install(tmp_path)
    assert schemas is not None
    uri = _get(schemas, "org.gnome.desktop.background", "picture-uri").strip("'")
    path = Path(uri.removeprefix("file://"))
    assert path == tmp_path / "backgrounds" / ubuntu_defaults.WALLPAPER_NAME
    assert Image.open(io.BytesIO(path.read_bytes())).size == (1920, 1080)


@pytest.mark.skipif(not (ubuntu_defaults.SYSTEM_SCHEMAS / "org.gnome.shell.gschema.xml").is_file(),
                    reason="gnome-shell-common is not installed")
def test_favorite_apps_default_to_ubuntus_dock(tmp_path: Path) -> None:
    schemas = ubuntu_defaults.install(tmp_path)
    assert schemas is not None
    assert _get(schemas, "org.gnome.shell", "favorite-apps") == \
        "[" + ", ".join(f"'{name}'" for name in ubuntu_defaults.UBUNTU_FAVORITES) + "]"


def test_without_schemas_nothing_is_installed(tmp_path: Path) -> None:
    assert ubuntu_defaults.install(tmp_path, system_schemas=tmp_path / "none") is None
