"""Fixtures of the second half of the `compare_pptx_files` tasks (see `pptx_tasks_a`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pptx.enum.text import PP_ALIGN

from tests.oracle.pptx_fixtures import (
    TITLE_ONLY,
    SlideSpec,
    align,
    background,
    bullets,
    deck,
    move,
    notes,
    numbered,
    on,
    on_slide,
    remove,
    text,
)
from tests.oracle.pptx_tasks_a import RED, TaskFiles

YELLOW, BLACK, GREEN = (255, 255, 0), (0, 0, 0), (0, 255, 0)


def t_f23acfd2(d: Path) -> TaskFiles:
    slides = [SlideSpec("Agenda", layout=TITLE_ONLY, boxes=[(["Welcome", "Budget review", "Next steps"], 2, 5, 20,
                                                             6)])]
    return [deck(d / "gold.pptx", slides, bullets(0, 1, "•")), deck(d / "gold2.pptx", slides, bullets(0, 1, "●")),
            deck(d / "gold3.pptx", slides, bullets(0, 1, "•"), on_slide(0, name="Calibri")),
            deck(d / "gold4.pptx", slides, bullets(0, 1, "●"), on_slide(0, name="Calibri"))], [
        ("round bullets", deck(d / "good.pptx", slides, bullets(0, 1, "•")), 1.0),
        ("dash bullets", deck(d / "dash.pptx", slides, bullets(0, 1, "–")), 0.0),
        ("no bullets", deck(d / "none.pptx", slides), 0.0)]


def t_70bca0cc(d: Path) -> TaskFiles:
    title_blue = (46, 117, 182)
    slides = numbered(2, s2=SlideSpec("Market", ["Growth"], title_color=title_blue))
    return [deck(d / "gold.pptx", slides, background(1, title_blue))], [
        ("background as the title", deck(d / "good.pptx", slides, background(1, title_blue)), 1.0),
        ("another blue", deck(d / "blue.pptx", slides, background(1, (0, 0, 255))), 0.0),
        ("both slides", deck(d / "both.pptx", slides, background(0, title_blue), background(1, title_blue)), 0.0)]


def t_af2d657a(d: Path) -> TaskFiles:
    slides = [SlideSpec(None, ["Our holiday"], layout=0), *numbered(1)]
    done = [text(0, 0, "Happy Family"), on(0, 0, name="Microsoft JhengHei")]
    return [deck(d / "gold.pptx", slides, *done)], [
        ("title in JhengHei", deck(d / "good.pptx", slides, *done, on(0, 0, size=54, bold=True)), 1.0),
        ("another font", deck(d / "arial.pptx", slides, done[0], on(0, 0, name="Arial")), 0.0),
        ("other case", deck(d / "case.pptx", slides, text(0, 0, "Happy family"), done[1]), 0.0)]


def t_57667013(d: Path) -> TaskFiles:
    slides = numbered(5, s5=SlideSpec("Contact", ["Email us"], boxes=[(["Thank you"], 2, 15, 10, 2)]))
    return [deck(d / "gold.pptx", slides, on_slide(4, color=YELLOW)),
            deck(d / "gold_all_fonts.pptx", slides, on_slide(4, color=YELLOW), on_slide(4, name="Calibri"))], [
        ("yellow", deck(d / "good.pptx", slides, on_slide(4, color=YELLOW)), 1.0),
        ("light yellow", deck(d / "light.pptx", slides, on_slide(4, color=(255, 255, 153))), 0.0),
        # runs without an RGB color of their own are not compared: coloring the title alone passes
        ("title only", deck(d / "title.pptx", slides, on(4, 0, color=YELLOW)), 1.0),
        ("orange", deck(d / "orange.pptx", slides, on_slide(4, color=(255, 128, 0))), 0.0)]


def t_0a211154(d: Path) -> TaskFiles:
    person = ((180, 140, 120), 14, 5, 8, 10)
    slides = [SlideSpec("Our team", ["People first"], pictures=[person]), SlideSpec("Agenda", ["Intro"]),
              SlideSpec("Customers", ["Stories"], pictures=[person])]
    done = [background(0, YELLOW), background(2, YELLOW), text(1, 0, "Let's start")]
    return [deck(d / "gold.pptx", slides, *done)], [
        ("people slides yellow", deck(d / "good.pptx", slides, *done, move(0, 2, left=10)), 1.0),
        ("every slide yellow", deck(d / "all.pptx", slides, *done, background(1, YELLOW)), 0.0),
        ("title typo", deck(d / "typo.pptx", slides, *done[:2], text(1, 0, "Lets start")), 0.0)]


def t_a53f80cd(d: Path) -> TaskFiles:
    icon = ((20, 20, 20), 2, 10, 1, 1)
    four = [*numbered(3), SlideSpec("Contact", ["Questions?"], pictures=[icon, icon],
                                    boxes=[(["Jane Doe", "jane@example.com"], 4, 10, 10, 3)])]
    titles = [on(1, 0, color=BLACK, bold=True), on(2, 0, color=BLACK, bold=True)]
    clean = [remove(3, 4), remove(3, 3), remove(3, 2)]
    return [deck(d / "gold.pptx", four, *titles, *clean),
            deck(d / "gold_all_fonts.pptx", four, *titles, *clean, *(on_slide(i, name="Calibri") for i in range(4)))], [
        ("titles black and bold, info gone", deck(d / "good.pptx", four, *titles, *clean), 1.0),
        ("icons kept", deck(d / "icons.pptx", four, *titles, remove(3, 4)), 0.0),
        ("titles not bold", deck(d / "plain.pptx", four, on(1, 0, color=BLACK), on(2, 0, color=BLACK), *clean), 0.0)]


def t_7ae48c60(d: Path) -> TaskFiles:
    photo = ((60, 90, 120), 2, 2, 8, 6)
    slides = numbered(6, s3=SlideSpec("A", layout=TITLE_ONLY, pictures=[photo]),
                      s4=SlideSpec("B", layout=TITLE_ONLY, pictures=[photo]),
                      s6=SlideSpec("C", layout=TITLE_ONLY, pictures=[photo]))
    heights = [move(2, 1, height=20), move(3, 1, height=30), move(5, 1, height=25)]
    scaled = [move(2, 1, height=20, width=26.7), move(3, 1, height=30, width=40), move(5, 1, height=25, width=33.3)]
    return [deck(d / "gold.pptx", slides, *heights), deck(d / "gold_all_fonts.pptx", slides, *heights,
                                                            on_slide(0, name="Calibri"))], [
        ("heights set, widths kept", deck(d / "good.pptx", slides, *heights), 1.0),
        ("heights set, widths scaled", deck(d / "scaled.pptx", slides, *scaled), 1.0),
        ("slide 4 at 25 cm", deck(d / "bad.pptx", slides, heights[0], move(3, 1, height=25), heights[2]), 0.0)]


def t_5cfb9197(d: Path) -> TaskFiles:
    rows = [["A", "B", "C", "D"], ["1", "2", "3", "4"]]
    slides = numbered(4, s4=SlideSpec("Data", layout=TITLE_ONLY, table=(rows, 2, 5, 20, 4)))

    def first_row(values: list[str]) -> Any:
        def edit(prs: Any) -> None:
            table = prs.slides[3].shapes[1].table
            for column, value in enumerate(values):
                table.cell(0, column).text = value
        return edit

    return [deck(d / "gold.pptx", slides, first_row(["T1", "T2", "T3", "T4"])),
            deck(d / "gold_all_fonts.pptx", slides, first_row(["T1", "T2", "T3", "T4"]), on(3, 1, name="Calibri"))], [
        ("T1..T4", deck(d / "good.pptx", slides, first_row(["T1", "T2", "T3", "T4"])), 1.0),
        # cell texts count through the slide-wide bullet check (every paragraph of the slide's XML)
        ("unchanged", deck(d / "same.pptx", slides), 0.0),
        ("last cell emptied", deck(d / "empty.pptx", slides, first_row(["T1", "T2", "T3", ""])), 0.0),
        ("bold header", deck(d / "bold.pptx", slides, first_row(["T1", "T2", "T3", "T4"]), on(3, 1, bold=True)), 0.0)]


def t_05dd4c1d(d: Path) -> TaskFiles:
    slides = numbered(5)
    slides[4] = SlideSpec("Slide 5", ["Centered point"])
    start = [align(4, 1, PP_ALIGN.CENTER)]
    done = [align(2, 1, PP_ALIGN.RIGHT), align(3, 1, PP_ALIGN.CENTER), align(4, 1, PP_ALIGN.LEFT)]
    return [deck(d / "gold.pptx", slides, *start, *done),
            deck(d / "gold_all_fonts.pptx", slides, *start, *done, on_slide(2, name="Calibri"))], [
        ("right, center, left", deck(d / "good.pptx", slides, *start, *done), 1.0),
        ("left as the default", deck(d / "default.pptx", slides, *start, *done[:2], align(4, 1, None)), 1.0),
        ("slide 4 right", deck(d / "bad.pptx", slides, *start, done[0], align(3, 1, PP_ALIGN.RIGHT), done[2]), 0.0)]


def t_5c1a6c3d(d: Path) -> TaskFiles:
    slides = [SlideSpec("Annual meeting", ["Agenda and goals"], layout=0), *numbered(1)]
    done = [on_slide(0, bold=True), on(0, 0, size=44, underline=True)]
    return [deck(d / "gold.pptx", slides, *done), deck(d / "gold_all_fonts.pptx", slides, *done,
                                                         on_slide(0, name="Calibri"))], [
        ("bold, 44 pt, underlined", deck(d / "good.pptx", slides, *done), 1.0),
        ("40 pt", deck(d / "small.pptx", slides, done[0], on(0, 0, size=40, underline=True)), 0.0),
        ("subtitle not bold", deck(d / "sub.pptx", slides, on(0, 0, bold=True, size=44, underline=True)), 0.0)]


def t_4ed5abd0(d: Path) -> TaskFiles:
    slides = numbered(5)
    done = [on(i, 0, color=BLACK, underline=True) for i in (1, 2, 4)]
    return [deck(d / "gold.pptx", slides, *done), deck(d / "gold_all_fonts.pptx", slides, *done,
                                                         on_slide(0, name="Calibri"))], [
        ("slides 2, 3, 5", deck(d / "good.pptx", slides, *done), 1.0),
        ("slide 5 missed", deck(d / "missed.pptx", slides, *done[:2]), 0.0),
        ("slide 5 not underlined", deck(d / "nound.pptx", slides, *done[:2], on(4, 0, color=BLACK, underline=False)),
         0.0)]


def t_e4ef0baf(d: Path) -> TaskFiles:
    slides = numbered(6, s3=SlideSpec("Photo", layout=TITLE_ONLY, pictures=[((60, 90, 120), 2, 2, 8, 6)]))
    done = [move(2, 1, height=20, width=26.67), on_slide(5, size=40)]
    return [deck(d / "gold.pptx", slides, *done), deck(d / "gold_all_fonts.pptx", slides, *done,
                                                         on_slide(0, name="Calibri"))], [
        ("20 cm and 40 pt", deck(d / "good.pptx", slides, *done), 1.0),
        ("19 cm", deck(d / "short.pptx", slides, move(2, 1, height=19, width=26.67), done[1]), 0.0),
        ("36 pt", deck(d / "small.pptx", slides, done[0], on_slide(5, size=36)), 0.0)]


def t_ed43c15f(d: Path) -> TaskFiles:
    slides = numbered(2, s2=SlideSpec("Gallery", ["A view"], pictures=[((60, 120, 60), 12, 8, 8, 6)]))
    underline = [on_slide(0, underline=True), on_slide(1, underline=True)]
    gold = deck(d / "gold.pptx", slides, *underline)
    return [gold], [
        ("picture at the top", deck(d / "good.pptx", slides, *underline, move(1, 2, top=0)), 1.0),
        # the check wants the picture above the expected file's and within 5.5 cm of the top
        ("picture where the gold has it", deck(d / "same.pptx", slides, *underline), 0.0),
        ("not underlined", deck(d / "plain.pptx", slides, move(1, 2, top=0)), 0.0)]


def t_3161d64e(d: Path) -> TaskFiles:
    slides = numbered(14, s14=SlideSpec("Summary", layout=TITLE_ONLY, boxes=[(["Key idea"], 2, 5, 20, 3),
                                                                              (["Details follow"], 2, 10, 20, 3)]))
    done = [on(13, 1, size=60), on(13, 2, size=28)]
    return [deck(d / "gold.pptx", slides, *done)], [
        ("60 and 28 pt", deck(d / "good.pptx", slides, *done, move(13, 1, height=5)), 1.0),
        ("swapped", deck(d / "swapped.pptx", slides, on(13, 1, size=28), on(13, 2, size=60)), 0.0)]


def t_04578141(d: Path) -> TaskFiles:
    slides = [SlideSpec("Colors", layout=TITLE_ONLY, boxes=[(["Top"], 2, 5, 10, 2), (["Middle"], 2, 9, 10, 2),
                                                            (["Bottom"], 2, 13, 10, 2)])]
    done = [on(0, 1, color=YELLOW), on(0, 2, color=RED), on(0, 3, color=GREEN)]
    return [deck(d / "gold.pptx", slides, *done), deck(d / "gold_all_fonts.pptx", slides, *done,
                                                         on_slide(0, name="Calibri"))], [
        ("yellow, red, green", deck(d / "good.pptx", slides, *done), 1.0),
        ("dark red", deck(d / "dark.pptx", slides, done[0], on(0, 2, color=(201, 33, 30)), done[2]), 0.0),
        ("red and green swapped", deck(d / "swap.pptx", slides, done[0], on(0, 2, color=GREEN), on(0, 3, color=RED)),
         0.0)]


def t_eb303e01(d: Path) -> TaskFiles:
    slides = numbered(4, s1=SlideSpec("Lecture 1", ["Intro"], notes="Welcome"),
                      s2=SlideSpec("Plan", ["Topics"], notes="Go over the plan"))
    done = [notes(2, "Explain point three"), notes(3, "Wrap up")]
    return [deck(d / "gold.pptx", slides, *done)], [
        ("every slide has its notes", deck(d / "good.pptx", slides, notes(2, "Explain point three\n"),
                                           notes(3, " Wrap up"), move(0, 1, top=6)), 1.0),
        ("last notes missing", deck(d / "missing.pptx", slides, done[0]), 0.0),
        ("notes swapped", deck(d / "swapped.pptx", slides, notes(2, "Wrap up"), notes(3, "Explain point three")),
         0.0)]


TASKS_B = {
    "f23acfd2-c485-4b7c-a1e7-d4303ddfe864": t_f23acfd2, "70bca0cc-c117-427e-b0be-4df7299ebeb6": t_70bca0cc,
    "af2d657a-e6b3-4c6a-9f67-9e3ed015974c": t_af2d657a, "57667013-ea97-417c-9dce-2713091e6e2a": t_57667013,
    "0a211154-fda0-48d0-9274-eaac4ce5486d": t_0a211154, "a53f80cd-4a90-4490-8310-097b011433f6": t_a53f80cd,
    "7ae48c60-f143-4119-b659-15b8f485eb9a": t_7ae48c60, "5cfb9197-e72b-454b-900e-c06b0c802b40": t_5cfb9197,
    "05dd4c1d-c489-4c85-8389-a7836c4f0567": t_05dd4c1d, "5c1a6c3d-c1b3-47cb-9b01-8d1b7544ffa1": t_5c1a6c3d,
    "4ed5abd0-8b5d-47bd-839f-cacfa15ca37a": t_4ed5abd0, "e4ef0baf-4b52-4590-a47e-d4d464cca2d7": t_e4ef0baf,
    "ed43c15f-00cb-4054-9c95-62c880865d68": t_ed43c15f, "3161d64e-3120-47b4-aaad-6a764a92493b": t_3161d64e,
    "04578141-1d42-4146-b9cf-6fab4ce5fd74": t_04578141, "eb303e01-261e-4972-8c07-c9b4e7a4922a": t_eb303e01,
}
