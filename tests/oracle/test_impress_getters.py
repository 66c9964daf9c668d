"""Differential tests of the impress getters (`services/runner/osworld/getters/impress.py`) against
OSWorld's `desktop_env/evaluators/getters/impress.py`: ours reads the env through the `FakeEnv`
test double, OSWorld's through the oracle's stand-in env serving the same files (its controller's `files`). Both
must return the same media (same bytes, same place relative to their download directory), or both
None, or both fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lxml import etree
from PIL import Image
from pptx.opc.constants import RELATIONSHIP_TYPE as RT
from pptx.opc.package import Part
from pptx.opc.packuri import PackURI

from services.runner.osworld import EvalContext, EvalError, get_state
from tests.oracle.client import Oracle
from tests.oracle.office_support import task, tasks_with_getter
from tests.oracle.pptx_fixtures import SlideSpec, build, png
from tests.runner.osworld.test_setup import FakeEnv, make_ctx

GETTERS = "getters.impress"
AUDIO = b"ID3\x03\x00\x00\x00\x00\x00\x00" + bytes(range(256)) * 4
P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"
A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _save(prs: Any, path: Path) -> bytes:
    prs.save(str(path))
    return path.read_bytes()


def _with_audio(path: Path, how: str, slide: int = 0) -> bytes:
    """A deck whose slide `slide` relates to an audio file: embedded in the package ("embedded"),
    linked to a file in the env ("linked"), or only through a generic media relationship ("media")."""
    prs = build([SlideSpec("Baseball history", ["1845: first rules"]), SlideSpec("Teams", ["Mets"])])
    part = prs.slides[slide].part
    if how == "linked":
        part.relate_to("file:///home/user/Desktop/Baseball.mp3", RT.AUDIO, is_external=True)
    else:
        media = Part(PackURI("/ppt/media/media1.mp3"), "audio/mpeg", prs.part.package, AUDIO)
        part.relate_to(media, RT.AUDIO if how == "embedded" else RT.MEDIA)
    return _save(prs, path)


def _with_background(path: Path, how: str) -> bytes:
    """A deck whose second slide has a picture background ("embedded"), a solid background
    ("solid"), or the picture as an ordinary shape ("shape")."""
    prs = build([SlideSpec("Robotic workshop"), SlideSpec("Schedule", ["Day 1"])])
    slide = prs.slides[1]
    if how == "shape":
        slide.shapes.add_picture(png((20, 120, 60)), 0, 0)
        return _save(prs, path)
    if how == "solid":
        fill = slide.background.fill
        fill.solid()
        return _save(prs, path)
    _, r_id = slide.part.get_or_add_image_part(png((20, 120, 60), (160, 90)))
    background = etree.fromstring(
        f'<p:bg xmlns:p="{P_NS}" xmlns:a="{A_NS}" xmlns:r="{R_NS}"><p:bgPr><a:blipFill rotWithShape="0">'
        f'<a:blip r:embed="{r_id}"/><a:stretch><a:fillRect/></a:stretch></a:blipFill><a:effectLst/></p:bgPr></p:bg>')
    slide._element.cSld.insert(0, background)
    return _save(prs, path)


def _both(oracle: Oracle, tmp_path: Path, getter: str, config: dict[str, Any], files: dict[str, bytes]) -> Any:
    """Run OSWorld's getter and ours on the same env files; assert the same outcome; return ours."""
    vm_root, oracle_cache = tmp_path / "vm", tmp_path / "oracle_cache"
    vm_files = {}
    for vm_path, data in files.items():
        host = vm_root / vm_path.lstrip("/")
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_bytes(data)
        vm_files[vm_path] = str(host)
    oracle_cache.mkdir(parents=True)
    stand_in = {"cache_dir": str(oracle_cache), "controller": {"files": vm_files}}
    reply = oracle.call(GETTERS, f"get_{getter}", config, env=stand_in)
    ctx = EvalContext(setup=make_ctx(tmp_path), cache_dir=tmp_path / "cache", work_dir=tmp_path / "work")
    env = FakeEnv(files=dict(files))
    if not reply.ok:
        with pytest.raises(EvalError, match=getter):
            get_state(env, {"type": getter, **config}, ctx)
        return None
    ours = get_state(env, {"type": getter, **config}, ctx)
    if reply.value is None:
        assert ours is None
        return None
    assert isinstance(ours, str), f"OSWorld returned {reply.value!r}, ours {ours!r}"
    assert Path(ours).relative_to(tmp_path / "work") == Path(reply.value).relative_to(oracle_cache)
    assert Path(ours).read_bytes() == Path(reply.value).read_bytes()
    return ours


def _config(task_id: str, getter: str) -> dict[str, Any]:
    evaluator = task(task_id)["evaluator"]
    config = next(c for key in ("result", "expected") for c in
                  (evaluator[key] if isinstance(evaluator[key], list) else [evaluator[key]]) if c["type"] == getter)
    return {key: value for key, value in config.items() if key != "type"}


@pytest.mark.parametrize("task_id", tasks_with_getter("audio_in_slide"))
def test_audio_in_slide_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    config = _config(task_id, "audio_in_slide")
    ppt = config["ppt_file_path"]
    embedded = _both(oracle, tmp_path / "embedded", "audio_in_slide", config,
                     {ppt: _with_audio(tmp_path / "e.pptx", "embedded")})
    assert embedded is not None and Path(embedded).read_bytes() == AUDIO
    linked = _both(oracle, tmp_path / "linked", "audio_in_slide", config,
                   {ppt: _with_audio(tmp_path / "l.pptx", "linked"), "/home/user/Desktop/Baseball.mp3": AUDIO})
    assert linked is not None and Path(linked).name == config["dest"]
    assert _both(oracle, tmp_path / "gone", "audio_in_slide", config,
                 {ppt: _with_audio(tmp_path / "g.pptx", "linked")}) is None  # linked file missing in the env
    assert _both(oracle, tmp_path / "media", "audio_in_slide", config,
                 {ppt: _with_audio(tmp_path / "m.pptx", "media")}) is None
    assert _both(oracle, tmp_path / "other", "audio_in_slide", config,
                 {ppt: _with_audio(tmp_path / "o.pptx", "embedded", slide=1)}) is None
    _both(oracle, tmp_path / "missing", "audio_in_slide", config, {})  # no presentation in the env: both fail
    _both(oracle, tmp_path / "notzip", "audio_in_slide", config, {ppt: b"not a zip"})
    _both(oracle, tmp_path / "nokey", "audio_in_slide", {"ppt_file_path": ppt, "slide_index": 0}, {})


@pytest.mark.parametrize("task_id", tasks_with_getter("background_image_in_slide"))
def test_background_image_in_slide_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    config = _config(task_id, "background_image_in_slide")
    ppt = config["ppt_file_path"]
    image = _both(oracle, tmp_path / "embedded", "background_image_in_slide", config,
                  {ppt: _with_background(tmp_path / "e.pptx", "embedded")})
    assert image is not None
    with Image.open(image) as picture:  # the extracted picture is the frame put there
        assert picture.size == (160, 90)
    for how in ("solid", "shape"):
        assert _both(oracle, tmp_path / how, "background_image_in_slide", config,
                     {ppt: _with_background(tmp_path / f"{how}.pptx", how)}) is None
    one_slide = build([SlideSpec("Only one")])
    assert _both(oracle, tmp_path / "short", "background_image_in_slide", config,
                 {ppt: _save(one_slide, tmp_path / "one.pptx")}) is None
    _both(oracle, tmp_path / "missing", "background_image_in_slide", config, {})
    _both(oracle, tmp_path / "index", "background_image_in_slide", {**config, "slide_index": "x"},
          {ppt: _with_background(tmp_path / "i.pptx", "embedded")})
