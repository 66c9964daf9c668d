"""Differential tests: our VLC metrics (`services/runner/osworld/metrics/vlc/`) against OSWorld's own
(`desktop_env/evaluators/metrics/vlc.py`), on fixtures built for every task of `test_nogdrive.json`
that uses one: a real `vlcrc` written by the installed VLC, frames, GIFs and videos made with ffmpeg,
melodies as WAV / MP3, and the real `status.xml` of a VLC playing a file or an HLS stream (a local
HTTP server), fetched by our `vlc_playing_info` getter and by OSWorld's. Plus edge cases.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from PIL import Image

from common.polling import DeadlineExceeded, free_port, wait_until
from services.runner.osworld import EvalContext, get_state
from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics import METRICS
from tests.oracle import image_fixtures as img
from tests.oracle import media_fixtures as media
from tests.oracle.client import Oracle, same_value
from tests.oracle.differential import RAISES, Case, check_case
from tests.oracle.osworld_index import MetricUse, metric_uses
from tests.oracle.vlc_process import default_vlcrc, running_vlc, scratch_dir, serve_directory, status
from tests.runner.osworld.test_setup import FakeEnv, make_ctx

STUBS = ("acoustid",)  # imported by OSWorld's vlc.py, used by none of its metrics
AUDIO_TOL = 1e-6  # librosa / numpy 1 (oracle) vs 2 (ours): float noise in the MFCC, far below any decision

CONFIG_METRICS = ("check_qt_bgcone", "check_qt_max_volume", "check_qt_minimal_view", "check_qt_slider_colours",
                  "check_global_key_play_pause", "check_one_instance_when_started_from_file",
                  "is_vlc_recordings_folder")
VLC_METRICS = (*CONFIG_METRICS, "is_vlc_playing", "is_vlc_fullscreen", "compare_images", "compare_videos",
               "compare_audios")


def check(oracle: Oracle, metric: str, case: Case, options: dict[str, Any] | None = None, tol: float = 1e-9) -> Any:
    return check_case(oracle, "vlc", metric, case, options, stubs=STUBS, tol=tol)


@pytest.fixture(scope="module")
def vlcrc() -> str:
    """The vlcrc the installed VLC writes for a new user (every option a comment at its default)."""
    return default_vlcrc()


def _set_option(default: str, option: str, value: str) -> str:
    """The vlcrc as VLC saves it after the user changed `option`: its commented default line
    `#option=...` replaced by `option=value`."""
    lines = default.split("\n")
    index = next(i for i, line in enumerate(lines) if line.startswith(f"#{option}="))
    lines[index] = f"{option}={value}"
    return "\n".join(lines)


CONFIG_CHANGES: dict[str, tuple[str, str, list[str]]] = {
    # metric: (option, value the task asks for, realistic wrong values)
    "check_qt_bgcone": ("qt-bgcone", "0", ["1"]),
    "check_qt_max_volume": ("qt-max-volume", "200", ["150", "300"]),
    "check_qt_minimal_view": ("qt-minimal-view", "1", ["0"]),
    "check_one_instance_when_started_from_file": ("one-instance-when-started-from-file", "0", ["1"]),
    "check_global_key_play_pause": ("global-key-play-pause", "Ctrl+Alt+P", [""]),
    "check_qt_slider_colours": ("qt-slider-colours", "0;0;0;20;20;20;40;40;40;60;60;60",
                                ["0;0;0;20;20;20;255;199;15;245;39;29", "black"]),
    "is_vlc_recordings_folder": ("input-record-path", "/home/user/Desktop", ["/home/user/Videos", "/home/user"]),
}


def config_cases(default: str, tmp: Path, metric: str, rules: Any) -> list[Case]:
    option, right, wrongs = CONFIG_CHANGES[metric]
    unchanged = tmp / "vlcrc_default"
    unchanged.write_text(default)
    changed = tmp / "vlcrc"
    changed.write_text(_set_option(default, option, right))
    cases = [Case(f"{option}={right}", str(changed), rules), Case("left at the default", str(unchanged), rules, 0.0)]
    for index, wrong in enumerate(wrongs):
        path = tmp / f"vlcrc_wrong{index}"
        path.write_text(_set_option(default, option, wrong))
        cases.append(Case(f"{option}={wrong}", str(path), rules, 0.0))
    return cases


CONFIG_USES = [(metric, use) for metric in CONFIG_METRICS for use in metric_uses(metric)]


@pytest.mark.parametrize(("metric", "use"), CONFIG_USES, ids=[f"{m}:{u.id}" for m, u in CONFIG_USES])
def test_config_tasks(oracle: Oracle, vlcrc: str, tmp_path: Path, metric: str, use: MetricUse) -> None:
    for case in config_cases(vlcrc, tmp_path, metric, use.rules):
        check(oracle, metric, case, use.options)


def test_config_edge_cases(oracle: Oracle, vlcrc: str, tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1"
    latin1.write_bytes(b"# caf\xe9\nqt-bgcone=0\n")
    path = tmp_path / "vlcrc"
    path.write_text(_set_option(vlcrc, "qt-max-volume", "200"))
    for metric in CONFIG_METRICS:
        check(oracle, metric, Case("no file", None, {"expected_qt_bgcone": 0}, RAISES))
        check(oracle, metric, Case("not UTF-8", str(latin1), {"type": "match"}, RAISES))
    cases = {
        "check_qt_max_volume": [Case("rule without its key", str(path), {}, RAISES),
                                Case("expected as text", str(path), {"expected_qt_max_volume": "200"}, 1.0),
                                Case("expected as bool", str(path), {"expected_qt_max_volume": True}, 0.0)],
        "check_qt_slider_colours": [
            Case("match the default", str(path), {"type": "match",
                                                   "expected_qt_slider_colours": "153;210;153;20;210;20;255;199;15;"
                                                                                 "245;39;29"}, 1.0),
            Case("rule without type", str(path), {}, 0.0),
            Case("match without the colours", str(path), {"type": "match"}, 0.0)],
        "is_vlc_recordings_folder": [Case("rule without its key", str(path), {}, RAISES),
                                     Case("expected as int", str(path), {"recording_file_path": 0}, 0.0)],
    }
    for metric, metric_cases in cases.items():
        for case in metric_cases:
            check(oracle, metric, case)


def test_slider_rule_of_unknown_type_is_an_error_not_none(oracle: Oracle, vlcrc: str, tmp_path: Path) -> None:
    """Deliberate difference: OSWorld returns None (no score) for an unknown rule type; ours raises."""
    path = tmp_path / "vlcrc"
    path.write_text(vlcrc)
    theirs = oracle.call("metrics.vlc", "check_qt_slider_colours", str(path), {"type": "dark"}, stubs=STUBS)
    assert theirs.ok and theirs.value is None
    with pytest.raises(EvalError, match="'dark'"):
        METRICS["check_qt_slider_colours"](str(path), {"type": "dark"})


# --- what VLC plays: the real status.xml of a running VLC ----------------------------------------


def _fields(path: str) -> tuple[str | None, dict[str, str | None]]:
    """`<state>` and the meta fields of a status.xml (what is_vlc_playing reads; time and position
    move between two reads)."""
    tree = ElementTree.parse(path).getroot()
    meta = tree.find('information/category[@name="meta"]')
    return tree.findtext("state"), {info.get("name", ""): info.text for info in (meta if meta is not None else [])}


def _save_status(oracle: Oracle, port: int, tmp: Path, name: str) -> str:
    """status.xml fetched by our `vlc_playing_info` getter, checked against what OSWorld's own
    getter reads from the same VLC; returns our copy."""
    ctx = EvalContext(setup=make_ctx(tmp, vlc_port=port), cache_dir=tmp / "cache", work_dir=tmp / "work")
    (tmp / "osworld").mkdir(exist_ok=True)

    def both() -> tuple[str, Any]:
        ours = get_state(FakeEnv(host="127.0.0.1"), {"type": "vlc_playing_info", "dest": name}, ctx)
        theirs = oracle.call("getters.vlc", "get_vlc_playing_info", {"dest": name},
                             env={"vm_ip": "127.0.0.1", "vlc_port": port, "cache_dir": str(tmp / "osworld")})
        assert theirs.ok, theirs.error
        return str(ours), theirs.value

    # VLC fills in a file's meta (e.g. `encoded_by`) a moment after it starts playing: the two getters
    # read at different times may see different meta, so read both again until they agree.
    last: list[tuple[str, Any]] = []

    def agreed() -> bool:
        last[:] = [both()]
        return _fields(last[0][0]) == _fields(last[0][1])

    with contextlib.suppress(DeadlineExceeded):  # the assertion below shows the last difference
        wait_until(agreed, 15, "our getter and OSWorld's to read the same VLC status", interval_s=0.3)
    assert last, "the getters never read VLC's status"
    ours, theirs = last[0]
    assert _fields(ours) == _fields(theirs)
    return ours


def _switch(port: int, command: str, until: str, **params: str) -> None:
    """Send a playlist command to VLC's HTTP interface and wait until `until` is in its status."""
    status(port, command, **params)
    wait_until(lambda: until in status(port).text, 30, f"vlc status containing {until!r}")


def _use(metric: str, rule_type: str) -> MetricUse:
    return next(use for use in metric_uses(metric) if use.rules["type"] == rule_type)


def test_is_vlc_playing_a_file(oracle: Oracle, tmp_path: Path) -> None:
    """vlc/59f21cfb: the music video on the desktop plays; wrong: paused, another video."""
    use = _use("is_vlc_playing", "file_name")
    rules = use.rules
    with scratch_dir() as scratch:
        right = media.test_video(scratch / rules["file_name"], seconds=3)
        other = media.test_video(scratch / "Rick Astley - Together Forever (Official Video).mp4", seconds=3)
        with running_vlc(right, scratch) as port:
            playing = _save_status(oracle, port, tmp_path, "playing.xml")
            _switch(port, "pl_pause", "<state>paused</state>")
            paused = _save_status(oracle, port, tmp_path, "paused.xml")
            _switch(port, "in_play", "Together Forever", input=Path(other).as_uri())
            _switch(port, "pl_play", "<state>playing</state>")
            another = _save_status(oracle, port, tmp_path, "another.xml")
    for case in (Case("playing the video", playing, rules), Case("paused", paused, rules, 0.0),
                 Case("another video", another, rules, 0.0)):
        check(oracle, "is_vlc_playing", case, use.options)


def test_is_vlc_playing_a_stream(oracle: Oracle, tmp_path: Path) -> None:
    """vlc/bba3381f: an HLS stream plays; VLC names it by its playlist file (`master.m3u8`), which
    OSWorld matches against the task URL's file name. Served locally (no network here)."""
    use = _use("is_vlc_playing", "url")
    rules = use.rules
    with scratch_dir() as scratch:
        for folder, playlist in (("bipbop", "master.m3u8"), ("other", "prog_index.m3u8")):
            (scratch / folder).mkdir()
            media.ffmpeg("-f", "lavfi", "-i", "testsrc2=duration=4:size=160x120:rate=10", "-c:v", "libx264",
                         "-pix_fmt", "yuv420p", "-f", "hls", "-hls_time", "1", "-hls_list_size", "0",
                         "-hls_playlist_type", "vod", str(scratch / folder / playlist))
        with serve_directory(scratch) as site, running_vlc(f"{site}/bipbop/master.m3u8", scratch) as port:
            streaming = _save_status(oracle, port, tmp_path, "stream.xml")
            _switch(port, "in_play", "prog_index.m3u8", input=f"{site}/other/prog_index.m3u8")
            other = _save_status(oracle, port, tmp_path, "other.xml")
            site_port = int(site.rsplit(":", 1)[1])
            _not_vlc(oracle, tmp_path, site_port)
    for case in (Case("streaming the link", streaming, rules), Case("another stream", other, rules, 0.0)):
        check(oracle, "is_vlc_playing", case, use.options)


def _not_vlc(oracle: Oracle, tmp: Path, port: int) -> None:
    """vlc_playing_info where no VLC answers: a 404 from another web server gives None (both
    getters); a closed port crashes OSWorld's getter, ours raises EvalError."""
    ctx = EvalContext(setup=make_ctx(tmp, vlc_port=port), cache_dir=tmp / "cache", work_dir=tmp / "work")
    config = {"type": "vlc_playing_info", "dest": "none.xml"}
    assert get_state(FakeEnv(host="127.0.0.1"), config, ctx) is None
    theirs = oracle.call("getters.vlc", "get_vlc_playing_info", {"dest": "none.xml"},
                         env={"vm_ip": "127.0.0.1", "vlc_port": port, "cache_dir": str(tmp)})
    assert theirs.ok and theirs.value is None
    closed = free_port()
    closed_ctx = EvalContext(setup=make_ctx(tmp, vlc_port=closed), cache_dir=tmp / "cache", work_dir=tmp / "work")
    with pytest.raises(EvalError, match="not reachable"):
        get_state(FakeEnv(host="127.0.0.1"), config, closed_ctx)
    theirs = oracle.call("getters.vlc", "get_vlc_playing_info", {"dest": "none.xml"},
                         env={"vm_ip": "127.0.0.1", "vlc_port": closed, "cache_dir": str(tmp)})
    assert not theirs.ok and theirs.type == "ConnectionError"


STATUS = """<?xml version="1.0" encoding="utf-8" standalone="yes" ?>
<root><state>{state}</state><information><category name="meta">{meta}</category></information></root>"""


def test_is_vlc_playing_edge_cases(oracle: Oracle, tmp_path: Path) -> None:
    def xml(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    url = "https://devstreaming-cdn.apple.com/videos/streaming/examples/img_bipbop_adv_example_fmp4/master.m3u8"
    full_url = xml("url.xml", STATUS.format(state="playing", meta=f"<info name='url'>{url}?token=1</info>"))
    same_host = xml("host.xml", STATUS.format(
        state="playing", meta="<info name='filename'>https://devstreaming-cdn.apple.com/videos/streaming/examples/"
                              "img_bipbop_adv_example_fmp4/v5/master.m3u8</info>"))
    no_meta = xml("nometa.xml", STATUS.format(state="playing", meta=""))
    cases = [
        Case("URL with a query", full_url, {"type": "url", "url": url}, 1.0),
        Case("URL on the same host, path inside", same_host, {"type": "url", "url": url}, 0.0),
        Case("no file information", no_meta, {"type": "file_name", "file_name": "a.mp4"}, 0.0),
        Case("unknown rule type", full_url, {"type": "title"}, 0.0),
        Case("url rule without url", no_meta, {"type": "url"}, RAISES),
        Case("no state", xml("nostate.xml", "<root></root>"), {"type": "url", "url": url}, RAISES),
        Case("not XML", xml("bad.xml", "<root>"), {"type": "url", "url": url}, RAISES),
        Case("no file", None, {"type": "url", "url": url}, RAISES),
        Case("stopped", xml("stopped.xml", STATUS.format(state="stopped", meta="")), {}, 0.0),
    ]
    for case in cases:
        check(oracle, "is_vlc_playing", case)


def test_is_vlc_fullscreen(oracle: Oracle) -> None:
    """vlc/8d9fd4e2: result = screen size, expected = VLC's window size (OSWorld's argument names are
    the other way round; the comparison is symmetric)."""
    (use,) = metric_uses("is_vlc_fullscreen")
    screen = {"width": 1920, "height": 1080}
    cases = [Case("fullscreen", screen, {"width": 1920, "height": 1080}),
             Case("maximised, not fullscreen", screen, {"width": 1920, "height": 1053}, 0.0),
             Case("no VLC window", screen, None, 0.0),
             Case("size without height", screen, {"width": 1920}, RAISES)]
    for case in cases:
        check(oracle, "is_vlc_fullscreen", case, use.options)


# --- media comparison ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def movie(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 10 s test-pattern movie (320x180, 5 fps) to take frames and clips from."""
    return media.test_video(tmp_path_factory.mktemp("movie") / "movie.mp4", seconds=10, size="320x180", rate=5)


def images(tmp: Path, use: MetricUse, movie: str) -> list[Case]:
    """Each compare_images task: the agent's image against the gold one; `want` ranges are wide
    (the metric returns SSIM itself) but separate a right answer from a wrong one."""
    task = use.task.split("/")[1]
    high, low = (0.99, 1.0), (-1.0, 0.9)
    if task.startswith(("fba2c100", "47f7c0ce")):  # a frame of the video (snapshot / slide background)
        gold = media.frame_at(movie, 8, tmp / "gold.png")
        return [Case("the frame at 00:08", media.frame_at(movie, 8, tmp / "frame.png"), gold, high),
                Case("the frame at 00:02", media.frame_at(movie, 2, tmp / "early.png"), gold, low)]
    if task.startswith("efcf0d81"):  # the wallpaper, scaled to the screen, against the frame (base 0.11)
        gold = media.frame_at(movie, 5, tmp / "gold.png")
        wallpaper = Image.open(media.frame_at(movie, 5, tmp / "frame.png")).resize((1280, 720))
        return [Case("the frame as wallpaper", img.save(wallpaper, tmp / "wallpaper.png"), gold, (0.95, 1.0)),
                Case("another wallpaper", img.save(img.stripes(1280, 720), tmp / "default.png"), gold, 0.0)]
    if task.startswith("2fe4b718"):  # the animated GIF (its first frame counts)
        gold = media.clip_gif(movie, 3, 5, tmp / "gold.gif")
        return [Case("clip from 00:03", media.clip_gif(movie, 3, 5, tmp / "clip.gif"), gold, high),
                Case("clip from 00:00", media.clip_gif(movie, 0, 5, tmp / "early.gif"), gold, low)]
    if task.startswith("c2751594"):  # wallpaper = the image from the mail's document (base 0.54)
        picture = img.photo(seed=21, width=240, height=160)
        gold = img.save(picture, tmp / "gold_background.png")
        return [Case("the document's image", img.save(picture, tmp / "background.png"), gold, 1.0),
                Case("the default wallpaper", img.save(img.graphic(240, 160), tmp / "default.png"), gold, 0.0)]
    if task.startswith("09a37c51"):  # pic.jpg edited as the document asks (here: mirrored)
        picture = img.mirrored(img.photo(seed=22, width=200, height=150))
        gold = img.save(picture, tmp / "pic_Gold.jpg", quality=95)
        return [Case("edited, saved at quality 85", img.save(picture, tmp / "pic.jpg", quality=85), gold,
                     (0.85, 1.0)),
                Case("left unedited", img.save(img.photo(seed=22, width=200, height=150), tmp / "orig.jpg"), gold,
                     low)]
    # libreoffice_impress/455d3c66: the slide exported as PNG
    gold = img.save(img.graphic(320, 180), tmp / "res_gold.png")
    return [Case("slide exported", img.save(img.graphic(320, 180), tmp / "res.png"), gold, high),
            Case("another slide", img.save(img.stripes(320, 180), tmp / "other.png"), gold, low)]


IMAGE_USES = metric_uses("compare_images")


@pytest.mark.parametrize("use", IMAGE_USES, ids=[u.id for u in IMAGE_USES])
def test_compare_images_tasks(oracle: Oracle, tmp_path: Path, movie: str, use: MetricUse) -> None:
    for case in images(tmp_path, use, movie):
        check(oracle, "compare_images", case, use.options)


def test_compare_images_edge_cases(oracle: Oracle, tmp_path: Path) -> None:
    wide = img.save(img.photo(width=100, height=50), tmp_path / "wide.png")
    tall = img.save(img.photo(width=80, height=90), tmp_path / "tall.png")
    tiny = img.save(img.photo().resize((5, 5)), tmp_path / "tiny.png")
    corrupt = tmp_path / "corrupt.png"
    corrupt.write_bytes(b"\x89PNG not an image")
    for case in (Case("sizes compared as (width, height) tuples", wide, tall, (-1.0, 1.0)),
                 Case("under the SSIM window", tiny, tiny, RAISES),
                 Case("corrupt", str(corrupt), wide, RAISES),
                 Case("no result", None, wide, 0.0), Case("empty path", "", wide, 0.0)):
        check(oracle, "compare_images", case)
    check(oracle, "compare_images", Case("below base + 0.01", wide, tall, 0.0, options={"reference_base_result": 0.99}))


def test_compare_videos_task(oracle: Oracle, tmp_path: Path) -> None:
    """vlc/aa4b5023: the upside-down video flipped and saved; wrong: left as is, cut short."""
    (use,) = metric_uses("compare_videos")
    gold = media.test_video(tmp_path / "gold.mp4", seconds=2, vflip=True)
    right = media.test_video(tmp_path / "flipped.mp4", seconds=2, vflip=True)
    cases = [Case("flipped", right, gold), Case("left upside down", media.test_video(tmp_path / "o.mp4", seconds=2),
                                                gold, 0.0),
             Case("cut short", media.test_video(tmp_path / "short.mp4", seconds=1, vflip=True), gold, 0.0),
             Case("not saved", None, gold, 0.0), Case("both missing", None, None, 1.0),
             Case("gold not a video", right, str(tmp_path / "missing.mp4"), 0.0),
             Case("expected is not a path", None, {"expected": "x"}, RAISES)]
    for case in cases:
        check(oracle, "compare_videos", case, use.options)
    check(oracle, "compare_videos", Case("only the first 5 frames", right, gold, 1.0,
                                         options={"max_frames_to_check": 5}))


@pytest.fixture(scope="module")
def songs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two melodies as WAV, MP3 at 128 and 192 kbit/s."""
    tmp = tmp_path_factory.mktemp("songs")
    files: dict[str, str] = {}
    for name, seed in (("song", 1), ("other", 2)):
        files[f"{name}.wav"] = media.write_wav(media.melody(3, seed), tmp / f"{name}.wav")
        files[f"{name}.mp3"] = media.to_mp3(files[f"{name}.wav"], tmp / f"{name}.mp3")
    files["song_192.mp3"] = media.to_mp3(files["song.wav"], tmp / "song_192.mp3", "192k")
    return files


def audios(tmp: Path, use: MetricUse, songs: dict[str, str]) -> list[Case]:
    task = use.task.split("/")[1]
    if task.startswith("c59742c0"):  # the MP3 inserted in the slide, extracted back, against the original
        copy = tmp / "Baseball.mp3"
        shutil.copyfile(songs["song.mp3"], copy)
        return [Case("the desktop's MP3", str(copy), songs["song.mp3"], 1.0),
                Case("another sound", songs["other.mp3"], songs["song.mp3"], (0.0, 0.8))]
    if task.startswith("778efd0a"):  # planet.wav extracted from the video
        return [Case("the soundtrack", songs["song.wav"], songs["song.wav"], 1.0),
                Case("the soundtrack through MP3", songs["song.mp3"], songs["song.wav"], (0.9, 1.0)),
                Case("another sound", songs["other.wav"], songs["song.wav"], (0.0, 0.8))]
    # vlc/8f080098: the song converted to MP3 (another bitrate than the gold)
    return [Case("converted at 192 kbit/s", songs["song_192.mp3"], songs["song.mp3"], (0.95, 1.0)),
            Case("another song", songs["other.mp3"], songs["song.mp3"], (0.0, 0.8)),
            Case("not converted", None, songs["song.mp3"], 0.0)]


AUDIO_USES = metric_uses("compare_audios")


@pytest.mark.timeout(900)  # the first librosa call JIT-compiles numba code: minutes on a loaded machine
@pytest.mark.parametrize("use", AUDIO_USES, ids=[u.id for u in AUDIO_USES])
def test_compare_audios_tasks(oracle: Oracle, tmp_path: Path, songs: dict[str, str], use: MetricUse) -> None:
    for case in audios(tmp_path, use, songs):
        check(oracle, "compare_audios", case, use.options, tol=AUDIO_TOL)


def test_compare_audios_edge_cases(oracle: Oracle, tmp_path: Path, songs: dict[str, str]) -> None:
    empty, garbage = tmp_path / "empty.mp3", tmp_path / "garbage.mp3"
    empty.write_bytes(b"")
    garbage.write_bytes(b"ID3 but not audio" * 10)
    silent = media.write_wav(media.melody(1, 3) * 0, tmp_path / "silent.wav")
    for case in (Case("both undecodable", str(empty), str(garbage), 1.0),
                 Case("one undecodable", str(empty), songs["song.mp3"], 0.0),
                 Case("missing file", str(tmp_path / "missing.mp3"), songs["song.mp3"], 0.0),
                 Case("empty path", "", songs["song.mp3"], 0.0)):
        check(oracle, "compare_audios", case, tol=AUDIO_TOL)
    theirs = oracle.call("metrics.vlc", "compare_audios", silent, songs["song.wav"], stubs=STUBS)
    ours = METRICS["compare_audios"](silent, songs["song.wav"])
    assert theirs.ok and same_value(ours, theirs.value, AUDIO_TOL), (ours, theirs.value)


def test_every_vlc_metric_use_is_covered() -> None:
    covered = {*CONFIG_METRICS, "is_vlc_playing", "is_vlc_fullscreen", "compare_images", "compare_videos",
               "compare_audios"}
    assert covered == set(VLC_METRICS)
    assert all(metric_uses(metric) for metric in VLC_METRICS)
    assert {u.task for u in metric_uses("is_vlc_playing")} == {
        "vlc/59f21cfb-0120-4326-b255-a5b827b38967", "vlc/bba3381f-b5eb-4439-bd9e-80c22218d5a7"}
