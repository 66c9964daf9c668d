"""Writers of stand-in files, one per file type: a small, valid file of that type whose content is drawn
from a seeded random generator (`Seed`), so the same URL always gives the same bytes and two URLs never
give the same content (every file also carries the URL's digest as text or pixels).

Used by `services.cli.standins` (which picks the writer by file name); each writer returns the file's bytes.
Office documents and PDFs are in `standin_office`; images come from Pillow, audio and video from ffmpeg
(`lavfi` sources). Zip-based formats are rewritten with a fixed
timestamp so their bytes do not depend on when they were made.
"""

from __future__ import annotations

import bz2
import datetime
import gzip
import io
import json
import lzma
import random
import re
import sqlite3
import subprocess
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

WORDS = ("alpha", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
         "kestrel", "lumen", "maple", "nectar", "onyx", "pepper", "quartz", "raven", "saffron", "tundra",
         "umber", "violet", "willow", "xenon", "yarrow", "zephyr")
ZIP_TIME = (2024, 1, 1, 0, 0, 0)
FIXED_DATETIME = datetime.datetime(2024, 1, 1)
#: Seconds of audio and video in stand-in media files.
MEDIA_SECONDS = 3


@dataclass
class Seed:
    """The random source of one URL's stand-in: `digest` (hex sha256 of the URL) seeds `rng`; `tag` is the
    text every stand-in carries (`cua-rollout stand-in <first 16 hex digits>`)."""

    digest: str
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(int(self.digest, 16))

    @property
    def tag(self) -> str:
        """The marker text of this URL's stand-in."""
        return f"cua-rollout stand-in {self.digest[:16]}"

    def words(self, count: int) -> str:
        """`count` random words joined by spaces."""
        return " ".join(self.rng.choice(WORDS) for _ in range(count))

    def color(self) -> tuple[int, int, int]:
        """A random RGB colour."""
        return (self.rng.randrange(256), self.rng.randrange(256), self.rng.randrange(256))

    def rows(self, count: int) -> list[list[object]]:
        """`count` table rows `[word, integer, float, word]`."""
        return [[self.rng.choice(WORDS).title(), self.rng.randrange(1, 1000), round(self.rng.uniform(0, 100), 2),
                 self.words(2)] for _ in range(count)]


HEADER = ["Name", "Count", "Score", "Note"]


def fixed_zip(data: bytes) -> bytes:
    """`data` (a zip archive) rewritten with every entry dated `ZIP_TIME`, order and compression kept;
    `mimetype` (ODF, EPUB) stays first and stored; the creation and modification times of Office's
    `docProps/core.xml` are set to 2024-01-01."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, ZIP_TIME)
            fixed.compress_type = zipfile.ZIP_STORED if info.filename == "mimetype" else zipfile.ZIP_DEFLATED
            fixed.external_attr = info.external_attr
            data = source.read(info.filename)
            if info.filename == "docProps/core.xml":  # openpyxl stamps the saving time into `modified`
                data = re.sub(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*(<)", rb"\g<1>2024-01-01T00:00:00Z\g<2>",
                              data)
            target.writestr(fixed, data)
    return out.getvalue()


def text(seed: Seed, lines: int = 6) -> bytes:
    """Plain text: the tag, then `lines` lines of words."""
    return ("\n".join([seed.tag] + [seed.words(6) for _ in range(lines)]) + "\n").encode()


def csv_file(seed: Seed) -> bytes:
    """A CSV table with a header and 12 rows."""
    rows = [HEADER] + seed.rows(12) + [["Tag", 0, 0, seed.tag]]
    return ("\n".join(",".join(str(c) for c in row) for row in rows) + "\n").encode()


def json_file(seed: Seed, workspace: bool = False) -> bytes:
    """A JSON object with the tag and a few keys; `workspace`: a VS Code workspace (`folders`)."""
    data: dict[str, object] = {"standin": seed.tag, **{seed.rng.choice(WORDS): seed.rng.randrange(100)
                                                       for _ in range(4)}}
    if workspace:
        data["folders"] = [{"path": "."}]
    return (json.dumps(data, indent=2) + "\n").encode()


def html(seed: Seed) -> bytes:
    """An HTML page with a title, a heading, paragraphs and a table."""
    cells = "".join(f"<tr>{''.join(f'<td>{c}</td>' for c in row)}</tr>" for row in seed.rows(4))
    body = "".join(f"<p>{seed.words(10)}</p>" for _ in range(3))
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{seed.words(3)}</title></head>"
            f"<body><h1>{seed.tag}</h1>{body}<table>{cells}</table></body></html>\n").encode()


def python(seed: Seed) -> bytes:
    """A Python module that prints a JSON object with the tag when run (a script whose output a checker
    parses reads valid JSON); any other name it is asked for is a function that returns False (so a stand-in
    test suite never passes, and stand-in modules import each other)."""
    return (f'"""{seed.tag}: stand-in for a file of an OSWorld task."""\n\nSTANDIN = {seed.tag!r}\n\n\n'
            "def __getattr__(name):\n    return lambda *args, **kwargs: False\n\n\n"
            'if __name__ == "__main__":\n    print(\'{"standin": "\' + STANDIN + \'"}\')\n').encode()


def shell(seed: Seed) -> bytes:
    """A shell script that prints the tag and exits 0."""
    return f"#!/bin/bash\n# {seed.tag}: stand-in for a script of an OSWorld task\necho '{seed.tag}'\n".encode()


def srt(seed: Seed) -> bytes:
    """A SubRip subtitle file with three cues."""
    lines = [seed.tag] + [seed.words(4) for _ in range(2)]
    cues = [f"{i}\n00:00:0{i - 1},000 --> 00:00:0{i},000\n{line}\n" for i, line in enumerate(lines, 1)]
    return "\n".join(cues).encode()


def image(seed: Seed, fmt: str) -> bytes:
    """A 320x240 image (`fmt`: a Pillow format name) of random pixels (so its structural similarity to any
    smooth or other stand-in image is near 0: OSWorld's SSIM checkers pay nothing for an unchanged picture)
    with a few small shapes, the digest's first 16 hex digits written on it."""
    from PIL import Image, ImageDraw

    picture = Image.frombytes("RGB", (320, 240), seed.rng.randbytes(320 * 240 * 3))  # random pixels
    draw = ImageDraw.Draw(picture)
    for _ in range(3):
        x, y = seed.rng.randrange(300), seed.rng.randrange(220)
        box = (x, y, x + seed.rng.randrange(5, 20), y + seed.rng.randrange(5, 20))
        (draw.ellipse if seed.rng.random() < 0.5 else draw.rectangle)(box, fill=seed.color())
    draw.text((8, 8), seed.digest[:16], fill=(255, 255, 255))
    out = io.BytesIO()
    picture.save(out, format=fmt)
    return out.getvalue()


def media(seed: Seed, suffix: str) -> bytes:
    """A short video (`.mp4`, `.webm`, `.mkv`, `.avi`: a coloured test pattern with a tone) or audio file
    (`.mp3`, `.wav`, `.ogg`, `.flac`: a tone), made by ffmpeg with bit-exact flags.

    Raises: RuntimeError when ffmpeg is missing or fails."""
    frequency = 220 + seed.rng.randrange(660)
    color = "0x{:02x}{:02x}{:02x}".format(*seed.color())
    audio = ["-f", "lavfi", "-i", f"sine=frequency={frequency}:duration={MEDIA_SECONDS}"]
    video = ["-f", "lavfi", "-i", f"color=c={color}:size=320x240:duration={MEDIA_SECONDS}:rate=10"]
    is_video = suffix in (".mp4", ".webm", ".mkv", ".avi", ".mov")
    inputs = video + audio if is_video else audio
    codec = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac"] if suffix in (".mp4", ".mov", ".mkv") else []
    with tempfile.TemporaryDirectory(prefix="standin-media-") as scratch:
        target = Path(scratch) / f"out{suffix}"
        command = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *inputs, *codec, "-threads", "1", "-shortest",
                   "-map_metadata", "-1", "-fflags", "+bitexact", "-flags", "+bitexact",
                   "-metadata", f"comment={seed.tag}", str(target)]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=60)
        except FileNotFoundError as exc:
            raise RuntimeError("ffmpeg is needed to make stand-in audio and video files") from exc
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"ffmpeg failed on {target.name}: {exc.stderr.decode(errors='replace')[-300:]}") \
                from exc
        return target.read_bytes()


def zip_archive(seed: Seed, extra: dict[str, bytes] | None = None) -> bytes:
    """A zip of a folder of text files and a CSV, plus `extra` (path -> bytes)."""
    out = io.BytesIO()
    folder = seed.rng.choice(WORDS)
    members = {f"{folder}/README.txt": text(seed), f"{folder}/data.csv": csv_file(seed),
               f"{folder}/notes/{seed.rng.choice(WORDS)}.txt": text(seed, 3), **(extra or {})}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in members.items():
            archive.writestr(zipfile.ZipInfo(path, ZIP_TIME), data)
    return out.getvalue()


def wheel(seed: Seed, name: str) -> bytes:
    """A pure-Python wheel named as `name` (`<dist>-<version>-...whl`) holding one module that pip installs."""
    dist, version = (name.split("-") + ["0.0.0"])[:2]
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{dist}/__init__.py": python(seed),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\nSummary: {seed.tag}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: cua-rollout\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in [*files.items(), (f"{info}/RECORD", record.encode())]:
            archive.writestr(zipfile.ZipInfo(path, ZIP_TIME), data)
    return out.getvalue()


def vsix(seed: Seed) -> bytes:
    """A VS Code extension package (`undefined_publisher.<word>`, no code) that `code --install-extension` takes."""
    name = f"standin-{seed.digest[:8]}"
    package = {"name": name, "displayName": seed.tag, "version": "0.0.1", "engines": {"vscode": "^1.0.0"},
               "categories": ["Other"], "contributes": {}}
    manifest = (
        '<?xml version="1.0" encoding="utf-8"?>\n<PackageManifest Version="2.0.0" '
        'xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011">\n<Metadata><Identity Language="en-US" '
        f'Id="{name}" Version="0.0.1" Publisher="undefined_publisher"/><DisplayName>{seed.tag}</DisplayName>'
        '<Description xml:space="preserve"></Description><Categories>Other</Categories>'
        '<Properties><Property Id="Microsoft.VisualStudio.Code.Engine" Value="^1.0.0"/></Properties></Metadata>\n'
        '<Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation><Dependencies/>\n'
        '<Assets><Asset Type="Microsoft.VisualStudio.Code.Manifest" Path="extension/package.json" '
        'Addressable="true"/></Assets>\n</PackageManifest>\n')
    types = ('<?xml version="1.0" encoding="utf-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
             'content-types"><Default Extension=".json" ContentType="application/json"/>'
             '<Default Extension=".vsixmanifest" ContentType="text/xml"/></Types>')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("extension.vsixmanifest", ZIP_TIME), manifest)
        archive.writestr(zipfile.ZipInfo("[Content_Types].xml", ZIP_TIME), types)
        archive.writestr(zipfile.ZipInfo("extension/package.json", ZIP_TIME), json.dumps(package, indent=2))
    return out.getvalue()


def epub(seed: Seed) -> bytes:
    """A minimal EPUB 3 book: one XHTML chapter."""
    files = {
        "mimetype": b"application/epub+zip",
        "META-INF/container.xml": b'<?xml version="1.0"?><container version="1.0" '
                                  b'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
                                  b'<rootfile full-path="book.opf" media-type="application/oebps-package+xml"/>'
                                  b'</rootfiles></container>',
        "book.opf": (f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
                     'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
                     f'<dc:identifier id="id">{seed.digest}'
                     f'</dc:identifier><dc:title>{seed.tag}</dc:title><dc:language>en</dc:language></metadata><manifest>'
                     '<item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest><spine>'
                     '<itemref idref="c1"/></spine></package>').encode(),
        "c1.xhtml": html(seed),
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, ZIP_TIME)
            info.compress_type = zipfile.ZIP_STORED if path == "mimetype" else zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return out.getvalue()


def tarball(seed: Seed, mode: str, members: dict[str, bytes] | None = None,
            extra: dict[str, bytes] | None = None) -> bytes:
    """A tar archive (`mode`: "gz", "xz" or "bz2"; the compressor's header carries no time) of `members`
    (path -> bytes; default: a folder of text files) and `extra`."""
    folder = seed.rng.choice(WORDS)
    members = members or {f"{folder}/README.txt": text(seed), f"{folder}/data.csv": csv_file(seed),
                          f"{folder}/notes/{seed.rng.choice(WORDS)}.txt": text(seed, 3)}
    members = {**members, **(extra or {})}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as archive:
        directories = sorted({str(Path(p).parents[i]) for p in members for i in range(len(Path(p).parents) - 1)})
        for directory in directories:
            info = tarfile.TarInfo(directory)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 1704067200
            archive.addfile(info)
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 1704067200
            archive.addfile(info, io.BytesIO(data))
    compress = {"gz": lambda data: gzip.compress(data, mtime=0), "xz": lzma.compress, "bz2": bz2.compress}[mode]
    return compress(out.getvalue())


#: The tables of Chrome's History database that OSWorld's `update_browse_history` and its getters use.
HISTORY_SCHEMA = """
CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR);
CREATE TABLE urls(id INTEGER PRIMARY KEY AUTOINCREMENT, url LONGVARCHAR, title LONGVARCHAR,
  visit_count INTEGER DEFAULT 0 NOT NULL, typed_count INTEGER DEFAULT 0 NOT NULL,
  last_visit_time INTEGER NOT NULL, hidden INTEGER DEFAULT 0 NOT NULL);
CREATE TABLE visits(id INTEGER PRIMARY KEY AUTOINCREMENT, url INTEGER NOT NULL, visit_time INTEGER NOT NULL,
  from_visit INTEGER, external_referrer_url TEXT, transition INTEGER DEFAULT 0 NOT NULL, segment_id INTEGER,
  visit_duration INTEGER DEFAULT 0 NOT NULL, incremented_omnibox_typed_score BOOLEAN DEFAULT FALSE NOT NULL,
  opener_visit INTEGER, originator_cache_guid TEXT, originator_visit_id INTEGER, originator_from_visit INTEGER,
  originator_opener_visit INTEGER, is_known_to_sync BOOLEAN DEFAULT FALSE NOT NULL,
  consider_for_ntp_most_visited BOOLEAN DEFAULT FALSE NOT NULL, visited_link_id INTEGER DEFAULT 0 NOT NULL,
  app_id TEXT);
INSERT INTO meta VALUES ('version', '69'), ('last_compatible_version', '16');
"""


def sqlite_db(seed: Seed, history: bool) -> bytes:
    """A SQLite database: Chrome's empty History schema (`history`), else one table of rows; the tag in it."""
    with tempfile.TemporaryDirectory(prefix="standin-db-") as scratch:
        path = Path(scratch) / "db.sqlite"
        connection = sqlite3.connect(path)
        try:
            if history:
                connection.executescript(HISTORY_SCHEMA)
                connection.execute("INSERT INTO meta VALUES ('standin', ?)", (seed.tag,))
            else:
                connection.execute("CREATE TABLE items(name TEXT, count INTEGER, score REAL, note TEXT)")
                connection.executemany("INSERT INTO items VALUES (?, ?, ?, ?)", seed.rows(12))
                connection.execute("INSERT INTO items VALUES ('Tag', 0, 0, ?)", (seed.tag,))
            connection.commit()
        finally:
            connection.close()
        return path.read_bytes()


def raw_bytes(seed: Seed, size: int = 4096) -> bytes:
    """`size` random bytes."""
    return seed.rng.randbytes(size)

