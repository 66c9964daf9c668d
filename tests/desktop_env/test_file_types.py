"""How the env's desktop types files for `xdg-open` (and so for the `open` setup step): by file name
first, as GNOME's gio does on OSWorld's VMs. Office files saved by LibreOffice list `docProps/*`
before the main part in the zip, which `file(1)`'s Office magic misses (it answers
`application/octet-stream`, and xdg-open would hand the deck to the browser)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from common.env_client import DesktopEnvClient

#: Zip entries in the order LibreOffice Impress writes a .pptx (its 7.x `--convert-to pptx`).
LIBREOFFICE_ORDER = ("[Content_Types].xml", "_rels/.rels", "docProps/core.xml", "docProps/app.xml",
                     "docProps/custom.xml", "ppt/presentation.xml", "ppt/_rels/presentation.xml.rels",
                     "ppt/slides/slide1.xml")


def _write_ooxml(path: Path, entries: tuple[str, ...]) -> None:
    """Stored (uncompressed) 1 KB parts: the main part's folder then starts past the bytes `file(1)`
    searches, so its magic answers `application/octet-stream` for this file whatever its name."""
    with zipfile.ZipFile(path, "w") as archive:
        for name in entries:
            archive.writestr(name, '<?xml version="1.0" encoding="UTF-8"?><x>' + "a" * 1000 + "</x>")


@pytest.mark.parametrize(("name", "mime"), [
    ("deck.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
    ("report.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    ("book.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
])
def test_libreoffice_saved_office_files_are_typed_by_name(env: DesktopEnvClient, home: Path, name: str,
                                                           mime: str) -> None:
    _write_ooxml(home / "Desktop" / name, LIBREOFFICE_ORDER)
    reply = env.execute(f"xdg-mime query filetype ~/Desktop/{name}", shell=True)
    assert reply.returncode == 0, reply
    assert (reply.output or "").strip() == mime
