"""The files an OSWorld task downloads: every URL a runner looks up in its URL cache (`common.url_cache`).

OSWorld fetches them over the network (`desktop_env/controllers/setup.py` `_download_setup` for `download`
steps, `desktop_env/evaluators/getters/file.py` `get_cloud_file` for `cloud_file` getters); here they come
from the cache, which `cua-rollout cache fill INDEX` fills once for users with internet. URLs a task only
opens in a browser (`chrome_open_tabs`, rules) are not files and not listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from common.url_cache import basename_of

EMPTY_HISTORY_URL = ("https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/"
                     "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite?download=true")
"""OSWorld's empty Chrome History database: every `update_browse_history` setup step reads it."""


@dataclass(frozen=True)
class TaskFile:
    """One downloaded file: its `url`, the env-side (or getter `dest`) `path` it is saved as, and where
    the task names it (`config`, `postconfig`, `result`, `expected`)."""

    url: str
    path: str
    where: str

    @property
    def basename(self) -> str:
        """File name of `path` (OSWorld's cache names files `<uuid5(url)>_<basename>`)."""
        return basename_of(self.path)


def _download_files(steps: Any, where: str) -> Iterator[TaskFile]:
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict) and step.get("type") == "update_browse_history":
            yield TaskFile(EMPTY_HISTORY_URL, "history_empty.sqlite", where)
        if not isinstance(step, dict) or step.get("type") != "download":
            continue
        for item in (step.get("parameters") or {}).get("files") or []:
            if isinstance(item, dict) and isinstance(item.get("url"), str):
                yield TaskFile(item["url"], str(item.get("path", "")), where)


def _cloud_files(getters: Any, where: str) -> Iterator[TaskFile]:
    for getter in getters if isinstance(getters, list) else [getters]:
        if not isinstance(getter, dict) or getter.get("type") != "cloud_file":
            continue
        paths, dests = getter.get("path"), getter.get("dest")
        if not isinstance(paths, list):
            paths, dests = [paths], [dests]
        if not isinstance(dests, list):
            dests = [dests] * len(paths)
        for url, dest in zip(paths, dests, strict=False):
            if isinstance(url, str):
                yield TaskFile(url, str(dest or ""), where)


def task_files(task: dict[str, Any]) -> list[TaskFile]:
    """Every file `task` (an OSWorld task JSON object) downloads, in order: setup `download` steps (and
    the empty History database of `update_browse_history` steps), postconfig `download` steps, then
    `cloud_file` getters of the result and the expected state."""
    evaluator = task.get("evaluator") or {}
    return [
        *_download_files(task.get("config"), "config"),
        *_download_files(evaluator.get("postconfig"), "postconfig"),
        *_cloud_files(evaluator.get("result"), "result"),
        *_cloud_files(evaluator.get("expected"), "expected"),
    ]


def unique_urls(tasks: Iterable[dict[str, Any]]) -> dict[str, TaskFile]:
    """URL -> its first `TaskFile` over `tasks` (a URL several tasks share is listed once)."""
    out: dict[str, TaskFile] = {}
    for task in tasks:
        for item in task_files(task):
            out.setdefault(item.url, item)
    return out
