"""OSWorld `desktop_env/evaluators/metrics/vlc.py`: VLC's config (`vlcrc`), its live state, and
media comparison (images, audio, video).

Sub-modules by concern: `config` (vlcrc options), `status` (playing, fullscreen), `media` (images
and videos), `audio` (MFCC + DTW).
"""

from __future__ import annotations

from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.metrics.vlc.audio import compare_audios
from services.runner.osworld.metrics.vlc.config import (
    check_global_key_play_pause,
    check_one_instance_when_started_from_file,
    check_qt_bgcone,
    check_qt_max_volume,
    check_qt_minimal_view,
    check_qt_slider_colours,
    is_vlc_recordings_folder,
)
from services.runner.osworld.metrics.vlc.media import compare_images, compare_videos
from services.runner.osworld.metrics.vlc.status import is_vlc_fullscreen, is_vlc_playing

METRICS: dict[str, Metric] = {
    "check_global_key_play_pause": check_global_key_play_pause,
    "check_one_instance_when_started_from_file": check_one_instance_when_started_from_file,
    "check_qt_bgcone": check_qt_bgcone,
    "check_qt_max_volume": check_qt_max_volume,
    "check_qt_minimal_view": check_qt_minimal_view,
    "check_qt_slider_colours": check_qt_slider_colours,
    "compare_audios": compare_audios,
    "compare_images": compare_images,
    "compare_videos": compare_videos,
    "is_vlc_fullscreen": is_vlc_fullscreen,
    "is_vlc_playing": is_vlc_playing,
    "is_vlc_recordings_folder": is_vlc_recordings_folder,
}
