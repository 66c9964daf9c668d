"""OSWorld `desktop_env/evaluators/getters/impress.py`: audio and background images inside slides.

Both getters copy the presentation `ppt_file_path` from the env (as `vm_file` does, to
`work_dir/<its file name>`), read slide `slide_index` (0-based) of the .pptx zip, and return the
host path of the media file: an embedded file is extracted next to the copy
(`work_dir/ppt/media/...`), a linked one (`file://` target) is copied from the env to
`work_dir/<dest>`. None when the slide has no such media (or a linked file is missing in the env).
Raises: EvalError for a missing config key, a presentation missing in the env or not a zip, a
malformed slide or relationship part, and a link that is neither relative nor `file://` (OSWorld
fails on all of these); env transport errors propagate unchanged.
"""

from __future__ import annotations

import os
import posixpath
import xml.etree.ElementTree as ET
import zipfile
from typing import Any

from services.runner.osworld.context import EvalContext
from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter
from services.runner.osworld.getters.file import get_vm_file
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import Needs

PML = "http://schemas.openxmlformats.org/presentationml/2006/main"
DML = "http://schemas.openxmlformats.org/drawingml/2006/main"
OFFICE_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PACKAGE_REL = "http://schemas.openxmlformats.org/package/2006/relationships"


def _config(config: dict[str, Any], where: str) -> tuple[str, int, str]:
    """(`ppt_file_path`, `slide_index` as int, `dest`). Raises: EvalError naming the bad key."""
    try:
        return config["ppt_file_path"], int(config["slide_index"]), config["dest"]
    except (KeyError, TypeError, ValueError) as exc:
        raise EvalError(f"{where}: needs 'ppt_file_path', an integer 'slide_index' and 'dest' ({exc!r})") from exc


def _fetch_presentation(env: EnvLike, ppt_path: str, ctx: EvalContext, where: str) -> str:
    """Host path of the env's presentation copied as `vm_file` would (dest: its file name)."""
    local = get_vm_file(env, {"path": ppt_path, "dest": os.path.split(ppt_path)[-1]}, ctx)
    if not isinstance(local, str):
        raise EvalError(f"{where}: presentation {ppt_path!r} not found in the env")
    return local


def _open_zip(local: str, ppt_path: str, where: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(local, "r")
    except zipfile.BadZipFile as exc:
        raise EvalError(f"{where}: {ppt_path!r} is not a .pptx (zip) file: {exc}") from exc


def _resolve_target(archive: zipfile.ZipFile, local: str, target: str, where: str) -> tuple[str | None, str | None]:
    """(extracted host path, None) for a package-relative target (`../media/x`), (None, env path)
    for a `file://` link. Raises: EvalError for any other target (OSWorld's assertion)."""
    if target.startswith(".."):
        member = posixpath.normpath(posixpath.join("ppt/slides", target))
        directory = os.path.dirname(local)
        try:
            archive.extract(member, directory)
        except KeyError as exc:
            raise EvalError(f"{where}: the slide links {target!r}, which is not in the package") from exc
        return os.path.join(directory, member), None
    if not target.startswith("file://"):
        raise EvalError(f"{where}: media target {target!r} is neither package-relative nor file://")
    return None, target[len("file://"):]


def _relationships(archive: zipfile.ZipFile, slide_index: int) -> list[ET.Element]:
    """The `<Relationship>` elements of slide `slide_index` (none when it has no rels part)."""
    rels = f"ppt/slides/_rels/slide{slide_index + 1}.xml.rels"
    if rels not in archive.namelist():
        return []
    with archive.open(rels) as handle:
        return ET.parse(handle).getroot().findall(f"{{{PACKAGE_REL}}}Relationship")


def _env_media(env: EnvLike, path: str | None, dest: str, ctx: EvalContext) -> str | None:
    if path is None:
        return None
    found = get_vm_file(env, {"path": path, "dest": dest}, ctx)
    return found if isinstance(found, str) else None


@crashes_as_eval_error("audio_in_slide")
def get_audio_in_slide(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None:
    """`audio_in_slide`: the first audio relationship (type containing "audio") of the slide: the
    extracted embedded file, or the linked env file copied to `work_dir/<dest>`."""
    where = "audio_in_slide"
    ppt_path, slide_index, dest = _config(config, where)
    local = _fetch_presentation(env, ppt_path, ctx, where)
    linked = None
    with _open_zip(local, ppt_path, where) as archive:
        for rel in _relationships(archive, slide_index):
            if "audio" in rel.attrib["Type"]:
                extracted, linked = _resolve_target(archive, local, rel.attrib["Target"], where)
                if extracted is not None:
                    return extracted
                break
    return _env_media(env, linked, dest, ctx)


def _background_image_id(archive: zipfile.ZipFile, slide_index: int) -> str | None | bool:
    """Relationship id of the picture in the slide's `<p:bgPr>` (the first one with an embedded
    `<a:blip>`); False when the slide does not exist, None when its background has no picture."""
    slide = f"ppt/slides/slide{slide_index + 1}.xml"
    if slide not in archive.namelist():
        return False
    with archive.open(slide) as handle:
        root = ET.parse(handle).getroot()
    for background in root.iter(f"{{{PML}}}bgPr"):
        for blip in background.iter(f"{{{DML}}}blip"):
            image_id = blip.attrib.get(f"{{{OFFICE_REL}}}embed")
            if image_id is not None:
                return image_id
            break  # OSWorld reads only the first blip of each bgPr
    return None


@crashes_as_eval_error("background_image_in_slide")
def get_background_image_in_slide(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None:
    """`background_image_in_slide`: the picture filling the slide's background: the extracted
    embedded image, or the linked env file copied to `work_dir/<dest>`."""
    where = "background_image_in_slide"
    ppt_path, slide_index, dest = _config(config, where)
    local = _fetch_presentation(env, ppt_path, ctx, where)
    linked = None
    with _open_zip(local, ppt_path, where) as archive:
        image_id = _background_image_id(archive, slide_index)
        if not isinstance(image_id, str):
            return None
        for rel in _relationships(archive, slide_index):
            if "image" in rel.attrib["Type"] and rel.attrib["Id"] == image_id:
                extracted, linked = _resolve_target(archive, local, rel.attrib["Target"], where)
                if extracted is not None:
                    return extracted
                break
    return _env_media(env, linked, dest, ctx)


GETTERS: dict[str, Getter] = {
    "audio_in_slide": get_audio_in_slide,
    "background_image_in_slide": get_background_image_in_slide,
}
NEEDS: dict[str, Needs] = {}
