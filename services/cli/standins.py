"""Stand-in files for the URL cache: a small, valid, deterministic file for every URL an OSWorld task set
downloads, so every task can be set up and scored offline without OSWorld's real files.

A stand-in is picked by the file's type (the extension of the task's destination path, else of the URL)
and drawn from a generator seeded by the URL's sha256 (`standin_formats`): the same URL always gives the
same bytes, and every URL's content differs from every other's, so a task's gold file never equals its
start file and a do-nothing agent cannot match a gold file by accident; a gold file (a task's expected
state) also carries the features tasks ask agents to add (a chart, a pivot table...), so a checker that
compares one finds it missing from every start file. Exceptions: a Thunderbird profile's saved logins are
encrypted by NSS, which randomizes them (`standin_thunderbird`); a tool an evaluator downloads from GitHub
is a working stand-in program (`_TOOLS`), the same for every commit. Stand-ins are not OSWorld's
files: a task scored on them tests the pipeline (setup, getters, checker), not a model.
`cua-rollout cache standins INDEX` loads them; `manifest.json` records each with `"source": "stand-in"`,
and `cua-rollout cache fill` replaces them with the real files.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from common import url_cache
from common.task_urls import TaskFile, task_files
from services.cli import cache_ops
from services.cli import standin_formats as fmt
from services.cli import standin_office as office
from services.cli import standin_thunderbird as thunderbird

#: `source` of a stand-in's entry in the cache manifest.
STANDIN_SOURCE = cache_ops.STANDIN_SOURCE

Writer = Callable[[fmt.Seed, str], bytes]

_WRITERS: dict[str, Writer] = {
    **{ext: (lambda seed, _name: office.xlsx(seed)) for ext in (".xlsx", ".xls", ".xlsm")},
    **{ext: (lambda seed, _name: office.docx(seed)) for ext in (".docx", ".doc")},
    **{ext: (lambda seed, _name: office.pptx(seed)) for ext in (".pptx", ".ppt")},
    ".ods": lambda seed, _name: office.odf(seed, spreadsheet=True),
    ".odt": lambda seed, _name: office.odf(seed, spreadsheet=False),
    ".pdf": lambda seed, _name: office.pdf(seed),
    ".csv": lambda seed, _name: fmt.csv_file(seed),
    ".json": lambda seed, _name: fmt.json_file(seed),
    ".code-workspace": lambda seed, _name: fmt.json_file(seed, workspace=True),
    **{ext: (lambda seed, _name: fmt.html(seed)) for ext in (".html", ".htm")},
    ".py": lambda seed, _name: fmt.python(seed),
    ".sh": lambda seed, _name: fmt.shell(seed),
    ".srt": lambda seed, _name: fmt.srt(seed),
    ".png": lambda seed, _name: fmt.image(seed, "PNG"),
    # An XCF stand-in is a PNG: GIMP opens a file by its content when the extension's loader refuses it.
    ".xcf": lambda seed, _name: fmt.image(seed, "PNG"),
    **{ext: (lambda seed, _name: fmt.image(seed, "JPEG")) for ext in (".jpg", ".jpeg")},
    ".gif": lambda seed, _name: fmt.image(seed, "GIF"),
    ".webp": lambda seed, _name: fmt.image(seed, "WEBP"),
    ".bmp": lambda seed, _name: fmt.image(seed, "BMP"),
    **{ext: (lambda seed, name: fmt.media(seed, PurePosixPath(name).suffix.lower()))
       for ext in (".mp4", ".webm", ".mkv", ".avi", ".mov", ".mp3", ".wav", ".ogg", ".flac")},
    ".whl": lambda seed, name: fmt.wheel(seed, name),
    ".vsix": lambda seed, _name: fmt.vsix(seed),
    ".epub": lambda seed, _name: fmt.epub(seed),
    ".raw": lambda seed, _name: fmt.raw_bytes(seed),
    **{ext: (lambda seed, name: fmt.sqlite_db(seed, history="history" in name.lower()))
       for ext in (".sqlite", ".db", ".sqlite3")},
}
#: Stand-ins that are working programs, by URL: tools OSWorld's evaluators download from GitHub, which this
#: machine cannot fetch (GitHub is unreachable; they are not on PyPI). Each is a program of cua-rollout's own
#: with the tool's command line and output for the options OSWorld's tasks use, not the tool itself:
#: unode/firefox_decrypt's `firefox_decrypt.py` (any commit) -> `standin_firefox_decrypt.py`.
_TOOLS: dict[re.Pattern[str], Path] = {
    re.compile(r"https://raw\.githubusercontent\.com/unode/firefox_decrypt/[^/]+/firefox_decrypt\.py"):
        Path(__file__).with_name("standin_firefox_decrypt.py"),
}
#: Writers of gold (expected-state) files, which carry the features tasks ask for (see `standin_formats.xlsx`).
_GOLD_WRITERS: dict[str, Callable[[fmt.Seed], bytes]] = {
    **{ext: (lambda seed: office.xlsx(seed, gold=True)) for ext in (".xlsx", ".xls", ".xlsm")},
    **{ext: (lambda seed: office.docx(seed, gold=True)) for ext in (".docx", ".doc")},
    **{ext: (lambda seed: office.pptx(seed, gold=True)) for ext in (".pptx", ".ppt")},
}
_TEXT = (".txt", ".md", ".tex", ".bib", ".css", ".js", ".log", ".yml", ".yaml", ".xml", ".ini", ".cfg", "")


@dataclass(frozen=True)
class LoadResult:
    """What `load` did: URLs given a stand-in (`generated`), and URLs `kept` (already cached from
    elsewhere, e.g. OSWorld's real file or an example fixture)."""

    generated: list[str]
    kept: list[str]


def file_name(item: TaskFile) -> str:
    """The name that decides a stand-in's type: the destination's basename when it has an extension,
    else the URL path's last component (URL-decoded)."""
    if PurePosixPath(item.basename).suffix:
        return item.basename
    return unquote(PurePosixPath(urlparse(item.url).path).name) or item.basename


def kind_of(name: str) -> str:
    """The stand-in type of a file name: its extension, lower case (`.tar.gz` / `.tgz` / `.tar.xz` kept
    whole); "" for a name without one."""
    lower = name.lower()
    for double in (".tar.gz", ".tar.xz", ".tar.bz2"):
        if lower.endswith(double):
            return double
    if lower.endswith(".tgz"):
        return ".tar.gz"
    return PurePosixPath(lower).suffix


def standin_bytes(url: str, name: str, gold: bool = False, members: Iterable[str] = ()) -> bytes:
    """The stand-in content of `url`, saved by a task as `name` (see the module docstring); `gold`: the
    file is a task's expected state (a `cloud_file` of `expected`), made with the features a task asks for;
    `members`: for an archive, paths it must hold (each a stand-in of its own type, see `archive_members`).

    Raises: RuntimeError when a media stand-in needs ffmpeg and it is missing or fails, or when NSS cannot
    encrypt a Thunderbird profile's saved logins."""
    for pattern, tool in _TOOLS.items():
        if pattern.fullmatch(url):
            return tool.read_bytes()
    seed = fmt.Seed(hashlib.sha256(url.encode("utf-8")).hexdigest())
    kind = kind_of(name)
    extra = {member: standin_bytes(f"{url}#{member}", member) for member in members}
    if kind == ".zip":
        return fmt.zip_archive(seed, extra)
    if kind in (".tar.gz", ".tar.xz", ".tar.bz2"):
        lower = name.lower()
        profile = thunderbird.thunderbird_profile(seed, blank="blank" in lower) if "thunderbird" in lower else None
        return fmt.tarball(seed, kind.rsplit(".", 1)[-1], profile, extra)
    if kind in (".gz", ".xz"):
        return fmt.tarball(seed, kind[1:], None, extra)
    if gold and kind in _GOLD_WRITERS:
        return _GOLD_WRITERS[kind](seed)
    writer = _WRITERS.get(kind)
    if writer is not None:
        return writer(seed, name)
    return fmt.text(seed)


ARCHIVES = (".zip", ".tar.gz", ".tar.xz", ".tar.bz2", ".gz", ".xz")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


HOME = "/home/user/"


def _absolute_paths(config: Any) -> set[str]:
    """Absolute paths in a task's `config`: whole string values (an `open` step's path, spaces and all) and
    the words of command strings."""
    found: set[str] = set()
    for value in _strings(config):
        try:
            words = shlex.split(value)
        except ValueError:
            words = value.split()
        found.update(v.rstrip("/") for v in [value, *words] if v.startswith("/") and "\n" not in v and " && " not in v)
    return {p for p in found if not any(part.startswith(".") for part in PurePosixPath(p).parts)}


def _extraction_dirs(config: Any) -> set[str]:
    """Directories a setup command extracts an archive into (`unzip -d DIR`, `tar -C DIR`)."""
    found = set()
    for value in _strings(config):
        for match in re.finditer(r"(?:^|\s)-[dC]\s+(/\S+)", value):
            found.add(match.group(1).rstrip("/") + "/")
    for step in config if isinstance(config, list) else []:
        command = (step.get("parameters") or {}).get("command") if isinstance(step, dict) else None
        if isinstance(command, list):
            for flag, target in zip(command, command[1:], strict=False):
                if flag in ("-d", "-C") and isinstance(target, str) and target.startswith("/"):
                    found.add(target.rstrip("/") + "/")
    return found


def archive_members(tasks: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """URL of a downloaded archive -> the paths a task's setup then uses inside it, relative to where it is
    extracted (the archive's directory, or an `unzip -d` / `tar -C` directory): files (with an extension)
    below it, and folders one level below it other than the home's (as `<folder>/README.txt`). E.g.
    multi_apps/5df7b33a unzips book.zip on the Desktop and opens `book/Spectral Graph Theory.pdf`; 2c9fc0de
    unzips binder.zip into ~/projects and works in `binder`."""
    found: dict[str, list[str]] = {}
    for task in tasks:
        files = task_files(task)
        downloaded = {item.path for item in files}
        paths = sorted(_absolute_paths(task.get("config")) - downloaded)
        bases = _extraction_dirs(task.get("config"))
        for item in files:
            if item.where != "config" or kind_of(item.basename) not in ARCHIVES or not item.path.startswith("/"):
                continue
            members = found.setdefault(item.url, [])
            for base in sorted({str(PurePosixPath(item.path).parent) + "/", *bases}):
                for path in paths:
                    relative = path[len(base):] if path.startswith(base) else ""
                    if not relative or not re.fullmatch(r"[\w .()-]+(/[\w .()-]+)*", relative):
                        continue
                    if PurePosixPath(relative).suffix:
                        member = relative
                    elif "/" not in relative and base != HOME and base in bases:
                        member = f"{relative}/README.txt"
                    else:
                        continue
                    if member not in members:
                        members.append(member)
    return {url: members for url, members in found.items() if members}


def load(cache_dir: Path, files: Iterable[TaskFile], force: bool = False,
         on_file: Callable[[str], None] | None = None, members: dict[str, list[str]] | None = None) -> LoadResult:
    """Put a stand-in in the URL cache `cache_dir` for every URL of `files` it does not hold
    (with `force`, also for URLs it holds: overwritten), each recorded in `manifest.json` as a stand-in.
    `on_file(url)` is called after each stand-in is written (progress). A URL the cache serves from its
    `index.json` (an example fixture) keeps that file: the index is looked up first. `members`: archive URL
    -> paths it must hold (`archive_members`).

    Raises: RuntimeError when a stand-in cannot be made (ffmpeg missing for media)."""
    directory = cache_dir
    generated: list[str] = []
    kept: list[str] = []
    entries: dict[str, dict[str, object]] = {}
    for item in {f.url: f for f in files}.values():
        if not force and cache_ops.is_cached(directory, item):  # a real file, a fixture, or this stand-in
            kept.append(item.url)
            continue
        data = standin_bytes(item.url, file_name(item), item.where == "expected", (members or {}).get(item.url, ()))
        path = url_cache.store(directory, item.url, data)
        entries[item.url] = cache_ops.manifest_entry(path, STANDIN_SOURCE)
        generated.append(item.url)
        if on_file is not None:
            on_file(item.url)
    cache_ops.record(directory, entries)
    return LoadResult(generated=generated, kept=kept)
