"""Impress presentations for the slides differential tests, built with python-pptx from a small
spec (titles, bullet bodies, pictures, tables, text boxes, notes, backgrounds) and edited as the
OSWorld tasks describe: `deck(path, slides, edit)` builds the task's original deck and applies the
edit of the gold file or of an agent result. Lengths are cm."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

from lxml import etree
from PIL import Image
from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.util import Cm, Pt

TITLE_AND_CONTENT, TITLE_ONLY, BLANK = 1, 5, 6
Edit = Callable[[Any], None]


@dataclass
class SlideSpec:
    """One slide: `body` paragraphs are text or (text, level); pictures/boxes/table give cm boxes."""

    title: str | None = None
    body: Sequence[str | tuple[str, int]] | None = None
    layout: int = TITLE_AND_CONTENT
    pictures: list[tuple[tuple[int, int, int], float, float, float, float]] = field(default_factory=list)
    boxes: list[tuple[Sequence[str], float, float, float, float]] = field(default_factory=list)
    table: tuple[list[list[str]], float, float, float, float] | None = None
    notes: str | None = None
    background: tuple[int, int, int] | None = None
    title_color: tuple[int, int, int] | None = None


def numbered(count: int, **overrides: SlideSpec) -> list[SlideSpec]:
    """`count` title-and-content slides ("Slide k", two bullet points), some replaced by `overrides`
    keyed "s<k>" (1-based)."""
    return [overrides.get(f"s{k}", SlideSpec(f"Slide {k}", [f"Point {k}.1", f"Point {k}.2"]))
            for k in range(1, count + 1)]


def png(color: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> BytesIO:
    """PNG bytes of one color (a photo stand-in)."""
    buffer = BytesIO()
    Image.new("RGB", size, color).save(buffer, "PNG")
    buffer.seek(0)
    return buffer


def _fill_text(frame: Any, paragraphs: Sequence[str | tuple[str, int]]) -> None:
    for index, item in enumerate(paragraphs):
        text, level = (item, 0) if isinstance(item, str) else item
        paragraph = frame.paragraphs[0] if index == 0 else frame.add_paragraph()
        paragraph.text = text
        paragraph.level = level


def build(slides: Sequence[SlideSpec]) -> Any:
    """A python-pptx presentation (default 4:3 template) of `slides`."""
    prs = Presentation()
    for spec in slides:
        slide = prs.slides.add_slide(prs.slide_layouts[spec.layout])
        if spec.title is not None and slide.shapes.title is not None:
            slide.shapes.title.text = spec.title
            if spec.title_color:
                set_runs(slide.shapes.title, color=spec.title_color)
        if spec.body is not None:
            _fill_text(slide.placeholders[1].text_frame, spec.body)
        for color, left, top, width, height in spec.pictures:
            slide.shapes.add_picture(png(color), Cm(left), Cm(top), Cm(width), Cm(height))
        for lines, left, top, width, height in spec.boxes:
            _fill_text(slide.shapes.add_textbox(Cm(left), Cm(top), Cm(width), Cm(height)).text_frame, lines)
        if spec.table is not None:
            rows, left, top, width, height = spec.table
            table = slide.shapes.add_table(len(rows), len(rows[0]), Cm(left), Cm(top), Cm(width), Cm(height)).table
            for i, row in enumerate(rows):
                for j, text in enumerate(row):
                    if text:
                        table.cell(i, j).text = text
        if spec.notes is not None:
            slide.notes_slide.notes_text_frame.text = spec.notes
        if spec.background is not None:
            set_background(slide, spec.background)
    return prs


def deck(path: Path, slides: Sequence[SlideSpec], *edits: Edit) -> str:
    """Build `slides`, apply `edits` to the presentation in order, save at `path`; returns the path."""
    prs = build(slides)
    for edit in edits:
        edit(prs)
    path.parent.mkdir(parents=True, exist_ok=True)
    prs.save(str(path))
    return str(path)


def runs(shape: Any) -> list[Any]:
    """Every run of a shape's text frame, or of every cell of a table shape."""
    if getattr(shape, "has_table", False):
        return [run for row in shape.table.rows for cell in row.cells
                for paragraph in cell.text_frame.paragraphs for run in paragraph.runs]
    return [run for paragraph in shape.text_frame.paragraphs for run in paragraph.runs]


def set_runs(shape: Any, **props: Any) -> None:
    """Set font properties on every run of `shape`: color (RGB), size (pt), bold, italic, underline,
    name, strike (True: single strike-through as Impress writes it)."""
    for run in runs(shape):
        for key, value in props.items():
            if key == "color":
                run.font.color.rgb = RGBColor(*value)
            elif key == "size":
                run.font.size = Pt(value)
            elif key == "strike":
                run.font._rPr.set("strike", "sngStrike" if value else "noStrike")
            else:
                setattr(run.font, key, value)


def set_background(slide: Any, rgb: tuple[int, int, int]) -> None:
    """A solid background color of the slide's own."""
    fill = slide.background.fill
    fill.solid()
    fill.fore_color.rgb = RGBColor(*rgb)


def shape(prs: Any, slide: int, index: int) -> Any:
    """Shape `index` of slide `slide` (both 0-based)."""
    return prs.slides[slide].shapes[index]


def on(slide: int, index: int, **props: Any) -> Edit:
    """An edit setting run properties on one shape (see `set_runs`)."""
    return lambda prs: set_runs(shape(prs, slide, index), **props)


def on_slide(slide: int, **props: Any) -> Edit:
    """An edit setting run properties on every shape with text of one slide."""
    def edit(prs: Any) -> None:
        for item in prs.slides[slide].shapes:
            if item.has_text_frame or getattr(item, "has_table", False):
                set_runs(item, **props)
    return edit


def background(slide: int, rgb: tuple[int, int, int]) -> Edit:
    return lambda prs: set_background(prs.slides[slide], rgb)


def notes(slide: int, text: str) -> Edit:
    def edit(prs: Any) -> None:
        prs.slides[slide].notes_slide.notes_text_frame.text = text
    return edit


def move(slide: int, index: int, *, left: float | None = None, top: float | None = None,
         width: float | None = None, height: float | None = None) -> Edit:
    """An edit moving/resizing one shape (cm); the other three sizes stay as they were."""
    def edit(prs: Any) -> None:
        item = shape(prs, slide, index)
        box = [item.left, item.top, item.width, item.height]
        for position, value in enumerate((left, top, width, height)):
            if value is not None:
                box[position] = Cm(value)
        item.left, item.top, item.width, item.height = box
    return edit


def remove(slide: int, index: int) -> Edit:
    def edit(prs: Any) -> None:
        element = shape(prs, slide, index)._element
        element.getparent().remove(element)
    return edit


def align(slide: int, index: int, alignment: Any) -> Edit:
    def edit(prs: Any) -> None:
        for paragraph in shape(prs, slide, index).text_frame.paragraphs:
            paragraph.alignment = alignment
    return edit


def text(slide: int, index: int, value: str) -> Edit:
    def edit(prs: Any) -> None:
        shape(prs, slide, index).text_frame.text = value
    return edit


def transition(kind: str | None, slide: int = 0) -> Edit:
    """A slide transition `<p:transition><p:{kind}/></p:transition>` as Impress writes a simple one."""
    def edit(prs: Any) -> None:
        if kind is not None:
            prs.slides[slide]._element.insert(2, etree.fromstring(
                f'<p:transition xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" spd="med">'
                f"<p:{kind}/></p:transition>"))
    return edit


def bullets(slide: int, index: int, char: str | None) -> Edit:
    """Give every paragraph of a shape the bullet `char` (None: `<a:buNone/>`)."""
    def edit(prs: Any) -> None:
        for paragraph in shape(prs, slide, index).text_frame.paragraphs:
            pPr = paragraph._p.get_or_add_pPr()
            for child in list(pPr):
                if child.tag.endswith(("}buChar", "}buNone", "}buAutoNum")):
                    pPr.remove(child)
            bullet = pPr.makeelement("{http://schemas.openxmlformats.org/drawingml/2006/main}"
                                     + ("buNone" if char is None else "buChar"), {} if char is None else {"char": char})
            pPr.append(bullet)
    return edit
