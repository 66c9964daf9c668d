"""OSWorld `desktop_env/evaluators/getters/vlc.py`: VLC's playing status, its config file and the
system's default video player."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter
from services.runner.osworld.getters.env_paths import expand_user, save_copy
from services.runner.osworld.params import require_str
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import Needs

VLC_HTTP_PASSWORD = "password"
"""Password of VLC's HTTP interface in OSWorld's VM (empty user name)."""
VLC_HTTP_TIMEOUT_S = 10.0
VLCRC = "~/.config/vlc/vlcrc"

VIDEO_TYPES = (
    "3gp", "3gp", "3gpp", "3gpp", "3gpp2", "3gpp2", "avi", "avi", "divx", "divx", "dv", "dv", "fli", "fli", "flv",
    "flv", "mp2t", "mp2t", "mp4", "mp4", "mp4v-es", "mp4v-es", "mpeg", "mpeg", "mpeg-system", "mpeg-system",
    "msvideo", "msvideo", "ogg", "ogg", "quicktime", "quicktime", "vnd.divx", "vnd.divx", "vnd.mpegurl",
    "vnd.mpegurl", "vnd.rn-realvideo", "vnd.rn-realvideo", "webm", "webm", "x-anim", "x-anim", "x-avi", "x-avi",
    "x-flc", "x-flc", "x-fli", "x-fli", "x-flv", "x-flv", "x-m4v", "x-m4v", "x-matroska", "x-matroska", "x-mpeg",
    "x-mpeg", "x-mpeg-system", "x-mpeg-system", "x-mpeg2", "x-mpeg2", "x-ms-asf", "x-ms-asf", "x-ms-asf-plugin",
    "x-ms-asf-plugin", "x-ms-asx", "x-ms-asx", "x-ms-wm", "x-ms-wm", "x-ms-wmv", "x-ms-wmv", "x-ms-wmx", "x-ms-wmx",
    "x-ms-wvx", "x-ms-wvx", "x-msvideo", "x-msvideo", "x-nsv", "x-nsv", "x-ogm", "x-ogm", "x-ogm+ogg", "x-theora",
    "x-theora", "x-theora+ogg", "x-theora+ogg",
)
"""The `video/<type>` MIME types OSWorld asks `xdg-mime` about, with its repetitions (which weigh the vote)."""
_SEPARATOR = "\x1e"


def get_vlc_playing_info(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str | None:
    """`vlc_playing_info`: VLC's `status.xml` from its HTTP interface
    (`http://<env host>:<ctx.setup.vlc_port>/requests/status.xml`, empty user, password "password"),
    written to `work_dir/<dest>`; returns the local path, None on a non-200 reply.

    Raises: EvalError for a missing `dest` or when the interface cannot be reached (VLC not running:
    OSWorld's getter crashes there too).
    """
    dest = require_str(config, "dest", "vlc_playing_info", EvalError)
    url = f"http://{env.host}:{ctx.setup.vlc_port}/requests/status.xml"
    try:
        response = httpx.get(url, auth=("", VLC_HTTP_PASSWORD), timeout=VLC_HTTP_TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise EvalError(f"vlc_playing_info: VLC's HTTP interface at {url} is not reachable: {exc}") from exc
    if response.status_code != 200:
        return None
    return save_copy(ctx, dest, response.content, "vlc_playing_info")


def get_vlc_config(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str:
    """`vlc_config`: copy the env user's `~/.config/vlc/vlcrc` to `work_dir/<dest>`; returns the
    local path.

    Raises: EvalError for a missing `dest`, or when the env has no vlcrc (OSWorld's getter crashes
    writing the missing content).
    """
    dest = require_str(config, "dest", "vlc_config", EvalError)
    path = expand_user(env, VLCRC, "vlc_config")
    data = env.get_file(path)
    if data is None:
        raise EvalError(f"vlc_config: {path} does not exist in the env (VLC writes it when its preferences are saved)")
    return save_copy(ctx, dest, data, "vlc_config")


def get_default_video_player(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> str:
    """`default_video_player`: the desktop file (`xdg-mime query default video/<type>` output, e.g.
    `"vlc.desktop\\n"`) that most of `VIDEO_TYPES` open with, ties going to the first asked;
    `"unknown"` when none has one. One shell command in the env runs every query (OSWorld sends one
    `/execute` per type; the answers are the same).
    """
    kinds = list(dict.fromkeys(VIDEO_TYPES))
    script = "; ".join(f"xdg-mime query default video/{kind}; printf '\\036'" for kind in kinds)
    result = env.execute(script, shell=True)
    answers = (result.output or "").split(_SEPARATOR) if result.status in (None, "success") else []
    by_kind = dict(zip(kinds, answers, strict=False))
    votes = Counter(by_kind[kind] for kind in VIDEO_TYPES if by_kind.get(kind))
    return votes.most_common(1)[0][0] if votes else "unknown"


GETTERS: dict[str, Getter] = {
    "default_video_player": get_default_video_player,
    "vlc_config": get_vlc_config,
    "vlc_playing_info": get_vlc_playing_info,
}
NEEDS: dict[str, Needs] = {}
