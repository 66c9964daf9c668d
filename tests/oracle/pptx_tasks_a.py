"""Fixtures of the first half of the `compare_pptx_files` tasks: per task, the gold file(s) (one per
metric use of the task) and agent results with the best score OSWorld should give them (None: only
agreement is asserted). Built from the task's instruction; the gold files' own content is not
available offline, so each deck is a small stand-in with the structure the instruction names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pptx.enum.text import PP_ALIGN
from pptx.util import Cm

from tests.oracle.pptx_fixtures import (
    BLANK,
    TITLE_ONLY,
    Edit,
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
    png,
    text,
)

Case = tuple[str, str | None, float | None]
TaskFiles = tuple[list[str], list[Case]]

PURPLE, GREEN, RED, ORANGE, DARK_RED_2 = (128, 0, 128), (0, 169, 51), (255, 0, 0), (255, 128, 0), (201, 33, 30)


def t_550ce7e7(d: Path) -> TaskFiles:
    club = [SlideSpec("Spring 2018 training", ["Buy new balls", "Book the field", "Plan the tournament"])]

    def strike(*indexes: int) -> Edit:
        def edit(prs: Any) -> None:
            body = prs.slides[0].shapes[1]
            for index in indexes:
                for run in body.text_frame.paragraphs[index].runs:
                    run.font._rPr.set("strike", "sngStrike")
        return edit

    gold = deck(d / "gold.pptx", club, strike(0, 1))
    all_fonts = deck(d / "gold_all_fonts.pptx", club, strike(0, 1), on_slide(0, name="Liberation Sans"))
    return [gold, all_fonts], [
        ("first two struck", deck(d / "good.pptx", club, strike(0, 1)), 1.0),
        ("only the first", deck(d / "one.pptx", club, strike(0)), 0.0),
        ("all three", deck(d / "all.pptx", club, strike(0, 1, 2)), 0.0)]


def t_af23762e(d: Path) -> TaskFiles:
    forests = [SlideSpec("Forests", ["Why forests matter"]), SlideSpec("Types", ["Tropical", "Boreal"]),
               SlideSpec("Threats", ["Logging", "Fire"])]
    summary = SlideSpec("Summary", ["Forests", "Types", "Threats"])
    return [deck(d / "gold.pptx", [*forests, summary])], [
        ("summary slide", deck(d / "good.pptx", [*forests, summary]), 1.0),
        ("no summary", deck(d / "none.pptx", forests), 0.0),
        ("a title missing", deck(d / "short.pptx", [*forests, SlideSpec("Summary", ["Forests", "Types"])]), 0.0)]


def t_9ec204e4(d: Path) -> TaskFiles:
    intro, a, b = SlideSpec("Works cited"), SlideSpec("MLA format", ["Author. Title."]), SlideSpec("Examples", ["Doe"])
    return [deck(d / "gold.pptx", [intro, a, b, a, b]),
            deck(d / "gold_all_fonts.pptx", [intro, a, b, a, b], *(on_slide(i, name="Calibri") for i in range(5)))], [
        ("A B A B", deck(d / "good.pptx", [intro, a, b, a, b]), 1.0),
        ("A A B B", deck(d / "paired.pptx", [intro, a, a, b, b]), 0.0),
        ("not duplicated", deck(d / "same.pptx", [intro, a, b]), 0.0)]


def t_a097acff(d: Path) -> TaskFiles:
    video = numbered(3)
    return [deck(d / "gold.pptx", video)], [
        ("saved as pre.pptx", deck(d / "pre.pptx", video), 1.0),
        ("not saved", None, 0.0),
        ("a slide lost", deck(d / "short.pptx", video[:2]), 0.0)]


def t_bf4e9888(d: Path) -> TaskFiles:
    colors = [(200, 40, 40), (40, 200, 40), (40, 40, 200), (200, 200, 40), (40, 200, 200), (200, 40, 200)]
    gold_slides = [SlideSpec(layout=BLANK, pictures=[(c, 2, 2, 20, 15)]) for c in colors]
    moved = [SlideSpec(layout=BLANK, pictures=[(c, 0, 0, 25.4, 19.05)]) for c in colors]
    swapped = [SlideSpec(layout=BLANK, pictures=[(c, 2, 2, 20, 15)]) for c in reversed(colors)]
    with_title = [SlideSpec("pic", layout=TITLE_ONLY, pictures=[(c, 2, 2, 20, 15)]) for c in colors]
    return [deck(d / "gold.pptx", gold_slides)], [
        ("six pictures", deck(d / "good.pptx", moved), 1.0),
        # compare_pptx_files does not look at picture contents: another order passes in OSWorld too
        ("pictures in another order", deck(d / "swapped.pptx", swapped), 1.0),
        ("title boxes left", deck(d / "titled.pptx", with_title), 0.0),
        ("five slides", deck(d / "five.pptx", gold_slides[:5]), 0.0)]


def t_358aa0a7(d: Path) -> TaskFiles:
    notes_deck = numbered(3, s3=SlideSpec("Tips", ["Review"], boxes=[(["Cornell method"], 2, 14, 10, 2)]))
    narrow = [on_slide(i, name="Liberation Sans Narrow") for i in range(3)]
    return [deck(d / "gold.pptx", notes_deck, *narrow)], [
        ("every text box", deck(d / "good.pptx", notes_deck, *narrow), 1.0),
        ("text box missed", deck(d / "missed.pptx", notes_deck, *narrow, on(2, 2, name="Calibri")), 0.0),
        ("unchanged", deck(d / "same.pptx", notes_deck), 0.0)]


def t_a669ef01(d: Path) -> TaskFiles:
    outline = numbered(3, s3=SlideSpec("Outline", [("Main idea", 0), ("Sub topics", 1),
                                                    ("continuation of the sub topics", 2)]))

    def flatten(prs: Any) -> None:
        prs.slides[2].shapes[1].text_frame.paragraphs[2].level = 1

    return [deck(d / "gold.pptx", outline, flatten, bullets(2, 1, None))], [
        ("same indent, no bullet", deck(d / "good.pptx", outline, flatten, bullets(2, 1, None)), 1.0),
        ("still indented", deck(d / "same.pptx", outline, bullets(2, 1, None)), 0.0),
        ("bullet kept as a dash", deck(d / "dash.pptx", outline, flatten, bullets(2, 1, "-")), 0.0)]


def t_73c99fb9(d: Path) -> TaskFiles:
    slides = numbered(2, s2=SlideSpec("Overview", []))
    return [deck(d / "gold.pptx", slides, text(1, 1, "Page 1"))], [
        ("in the content box", deck(d / "good.pptx", slides, text(1, 1, "Page 1")), 1.0),
        ("lower case", deck(d / "lower.pptx", slides, text(1, 1, "page 1")), 0.0),
        ("in a new text box", deck(d / "box.pptx", numbered(2, s2=SlideSpec("Overview", [], boxes=[
            (["Page 1"], 2, 5, 10, 2)]))), 0.0)]


def t_15aece23(d: Path) -> TaskFiles:
    slides = numbered(3, s2=SlideSpec("Product Comparison", ["Ours is faster", "Theirs is cheaper"]))
    original = deck(d / "original.pptx", slides, move(1, 0, left=1.27, top=0.76, width=22.86, height=3.18))
    return [original], [
        ("title at the bottom", deck(d / "good.pptx", slides, move(1, 0, left=1.27, top=15.5, width=22.86,
                                                                    height=3.18)), 1.0),
        ("title not moved", deck(d / "same.pptx", slides, move(1, 0, left=1.27, top=0.76, width=22.86,
                                                                height=3.18)), 0.0),
        ("moved a little", deck(d / "little.pptx", slides, move(1, 0, left=1.27, top=5, width=22.86, height=3.18)),
         0.0),
        ("body moved too", deck(d / "body.pptx", slides, move(1, 0, left=1.27, top=15.5, width=22.86, height=3.18),
                                text(1, 1, "Ours is faster")), 0.0)]


def t_986fc832(d: Path) -> TaskFiles:
    slides = numbered(3, s3=SlideSpec("Results", ["Revenue grew"], table=([["Year", "Revenue"], ["2023", "10"]],
                                                                           2, 10, 15, 4)))
    done = [on(2, 1, underline=True, color=DARK_RED_2), on(2, 2, underline=True, color=DARK_RED_2)]
    return [deck(d / "gold.pptx", slides, *done)], [
        ("text and table", deck(d / "good.pptx", slides, *done), 1.0),
        ("table left", deck(d / "table.pptx", slides, done[0]), 0.0),
        ("plain red", deck(d / "red.pptx", slides, on(2, 1, underline=True, color=RED),
                           on(2, 2, underline=True, color=RED)), 0.0)]


def t_a434992a(d: Path) -> TaskFiles:
    slides = numbered(2)
    done = [on(1, 1, size=12, color=ORANGE), background(1, RED)]
    return [deck(d / "gold.pptx", slides, *done)], [
        ("size, color, background", deck(d / "good.pptx", slides, *done), 1.0),
        ("background left", deck(d / "nobg.pptx", slides, done[0]), 0.0),
        ("size 14", deck(d / "size.pptx", slides, on(1, 1, size=14, color=ORANGE), done[1]), 0.0)]


def t_7dbc52a6(d: Path) -> TaskFiles:
    slides = numbered(3)
    done = [notes(1, "Slide 2"), on(1, 0, bold=True)]
    return [deck(d / "gold.pptx", slides, *done)], [
        ("note and bold title", deck(d / "good.pptx", slides, *done), 1.0),
        ("no note", deck(d / "nonote.pptx", slides, done[1]), 0.0),
        ("title not bold", deck(d / "plain.pptx", slides, done[0]), 0.0)]


def t_841b50aa(d: Path) -> TaskFiles:
    slides = [SlideSpec("Mobile apps", ["Design", "Build"])]
    return [deck(d / "gold.pptx", slides, notes(0, "APP"), background(0, PURPLE))], [
        ("note and purple", deck(d / "good.pptx", slides, notes(0, "  APP "), background(0, PURPLE)), 1.0),
        ("another purple", deck(d / "violet.pptx", slides, notes(0, "APP"), background(0, (112, 48, 160))), 0.0),
        ("no note", deck(d / "nonote.pptx", slides, background(0, PURPLE)), 0.0)]


def t_8979838c(d: Path) -> TaskFiles:
    slides = [SlideSpec("Team building", ["Games", "Lunch"])]
    return [deck(d / "gold.pptx", slides, background(0, PURPLE), notes(0, "Team building"))], [
        ("purple with the title as note", deck(d / "good.pptx", slides, background(0, PURPLE),
                                               notes(0, "Team building")), 1.0),
        ("note is the body", deck(d / "body.pptx", slides, background(0, PURPLE), notes(0, "Games")), 0.0)]


def t_b8adbc24(d: Path) -> TaskFiles:
    blue = (31, 73, 125)
    slides = [SlideSpec("E-commerce", ["Trends"], title_color=blue), SlideSpec(None, ["Convenience", "Prices"])]
    done = [text(1, 0, "Online Shopping"), on(1, 0, color=blue)]
    return [deck(d / "gold.pptx", slides, *done)], [
        ("same color", deck(d / "good.pptx", slides, *done, align(1, 0, PP_ALIGN.LEFT), on(1, 0, size=40)), 1.0),
        # a run without its own RGB color is not compared (OSWorld reads color only when both have one)
        ("theme color", deck(d / "theme.pptx", slides, done[0]), 1.0),
        ("another color", deck(d / "red.pptx", slides, done[0], on(1, 0, color=RED)), 0.0),
        ("other title", deck(d / "other.pptx", slides, text(1, 0, "Shopping online"), done[1]), 0.0)]


def t_2b94c692(d: Path) -> TaskFiles:
    slides = numbered(2, s2=SlideSpec("Our team", layout=TITLE_ONLY, pictures=[((90, 120, 160), 2, 6, 8, 6)]))
    return [deck(d / "original.pptx", slides)], [
        ("picture on the right", deck(d / "good.pptx", slides, move(1, 1, left=16)), 1.0),
        ("picture not moved", deck(d / "same.pptx", slides), 0.0),
        ("moved, still left of center", deck(d / "little.pptx", slides, move(1, 1, left=10)), 0.0)]


def t_9cf05d24(d: Path) -> TaskFiles:
    slides = numbered(2)
    return [deck(d / "gold.pptx", slides, background(0, GREEN))], [
        ("slide 1 green", deck(d / "good.pptx", slides, background(0, GREEN)), 1.0),
        ("both green", deck(d / "both.pptx", slides, background(0, GREEN), background(1, GREEN)), 0.0),
        ("light green", deck(d / "light.pptx", slides, background(0, (119, 188, 101))), 0.0)]


def t_08aced46(d: Path) -> TaskFiles:
    slides = numbered(2, s2=SlideSpec(None, ["Remember the deadline"]))
    done = [text(1, 0, "Note"), align(1, 0, PP_ALIGN.RIGHT)]
    return [deck(d / "gold.pptx", slides, *done), deck(d / "gold2.pptx", slides, *done, on(1, 0, name="Calibri"))], [
        ("right aligned Note", deck(d / "good.pptx", slides, *done), 1.0),
        ("left aligned", deck(d / "left.pptx", slides, done[0]), 0.0),
        ("centered", deck(d / "center.pptx", slides, done[0], align(1, 0, PP_ALIGN.CENTER)), 0.0)]


def t_edb61b14(d: Path) -> TaskFiles:
    slides = numbered(3)
    return [deck(d / "gold.pptx", slides, on_slide(2, name="Times New Roman"))], [
        ("last slide", deck(d / "good.pptx", slides, on_slide(2, name="Times New Roman")), 1.0),
        ("title only", deck(d / "title.pptx", slides, on(2, 0, name="Times New Roman")), 0.0),
        ("every slide", deck(d / "all.pptx", slides, *(on_slide(i, name="Times New Roman") for i in range(3))),
         0.0)]


def t_c82632a4(d: Path) -> TaskFiles:
    slides = numbered(2)

    def picture(size: float, left: float = 5) -> Edit:
        return lambda prs: prs.slides[1].shapes.add_picture(png((0, 0, 0)), Cm(left), Cm(8), Cm(size), Cm(size))

    return [deck(d / "gold.pptx", slides, picture(1.0))], [
        ("1 cm, elsewhere", deck(d / "good.pptx", slides, picture(1.0, left=12)), 1.0),
        ("within 1 %", deck(d / "near.pptx", slides, picture(1.005)), 1.0),
        ("2 cm", deck(d / "big.pptx", slides, picture(2.0)), 0.0),
        ("no picture", deck(d / "none.pptx", slides), 0.0)]


def t_39be0d19(d: Path) -> TaskFiles:
    slides = numbered(3, s2=SlideSpec("Features", layout=TITLE_ONLY))
    table = SlideSpec("Features", layout=TITLE_ONLY, table=([[""] * 2 for _ in range(5)], 2, 5, 20, 10))
    wrong = SlideSpec("Features", layout=TITLE_ONLY, table=([[""] * 5 for _ in range(2)], 2, 5, 20, 10))
    return [deck(d / "gold.pptx", numbered(3, s2=table))], [
        ("5 x 2 table", deck(d / "good.pptx", numbered(3, s2=table)), 1.0),
        ("2 x 5 table", deck(d / "swap.pptx", numbered(3, s2=wrong)), 0.0),
        ("no table", deck(d / "none.pptx", slides), 0.0)]


def t_ac1b39ff(d: Path) -> TaskFiles:
    rows = [["Plan", "Price"], ["Basic", "$5"], ["Pro", "$9"]]
    slides = numbered(3, s3=SlideSpec("Pricing", layout=TITLE_ONLY, table=(rows, 2, 5, 20, 4)))
    return [deck(d / "original.pptx", slides)], [
        ("table at the bottom", deck(d / "good.pptx", slides, move(2, 1, top=14)), 1.0),
        ("table not moved", deck(d / "same.pptx", slides), 0.0),
        ("title moved as well", deck(d / "title.pptx", slides, move(2, 1, top=14), move(2, 0, top=3)), 0.0)]


TASKS_A = {
    "550ce7e7-747b-495f-b122-acdc4d0b8e54": t_550ce7e7, "af23762e-2bfd-4a1d-aada-20fa8de9ce07": t_af23762e,
    "9ec204e4-f0a3-42f8-8458-b772a6797cab": t_9ec204e4, "a097acff-6266-4291-9fbd-137af7ecd439": t_a097acff,
    "bf4e9888-f10f-47af-8dba-76413038b73c": t_bf4e9888, "358aa0a7-6677-453f-ae35-e440f004c31e": t_358aa0a7,
    "a669ef01-ded5-4099-9ea9-25e99b569840": t_a669ef01, "73c99fb9-f828-43ce-b87a-01dc07faa224": t_73c99fb9,
    "15aece23-a215-4579-91b4-69eec72e18da": t_15aece23, "986fc832-6af2-417c-8845-9272b3a1528b": t_986fc832,
    "a434992a-89df-4577-925c-0c58b747f0f4": t_a434992a, "7dbc52a6-11e0-4c9a-a2cb-1e36cfda80d8": t_7dbc52a6,
    "841b50aa-df53-47bd-a73a-22d3a9f73160": t_841b50aa, "8979838c-54a5-4454-a2b8-3d135a1a5c8f": t_8979838c,
    "b8adbc24-cef2-4b15-99d5-ecbe7ff445eb": t_b8adbc24, "2b94c692-6abb-48ae-ab0b-b3e8a19cb340": t_2b94c692,
    "9cf05d24-6bd9-4dae-8967-f67d88f5d38a": t_9cf05d24, "08aced46-45a2-48d7-993b-ed3fb5b32302": t_08aced46,
    "edb61b14-a854-4bf5-a075-c8075c11293a": t_edb61b14, "c82632a4-56b6-4db4-9dd1-3820ee3388e4": t_c82632a4,
    "39be0d19-634d-4475-8768-09c130f5425d": t_39be0d19, "ac1b39ff-ee4d-4483-abce-c117e98942f0": t_ac1b39ff,
}
