"""VLC metric comparing two audio files (an extracted soundtrack, a converted song) by MFCC
features aligned with dynamic time warping.

Semantics of `compare_audios` in OSWorld `desktop_env/evaluators/metrics/vlc.py`, computed with
the same libraries: librosa (decoding at 22050 Hz mono, MFCC), fastdtw, scipy's cosine distance.
librosa is imported on first use (it pulls in numba and scikit-learn; only this metric needs it).
It never fetches anything: `librosa.load` decodes local files (soundfile, audioread/ffmpeg).
"""

from __future__ import annotations

import logging
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

log = logging.getLogger(__name__)

AudioPath = str | Path


Samples = NDArray[np.floating[Any]]


def _load(path: AudioPath) -> tuple[Samples, float] | None:
    """`(samples, rate in Hz)` of `path` (librosa's defaults: mono, 22050 Hz), None when it cannot
    be decoded or holds no samples."""
    import librosa

    try:
        with warnings.catch_warnings():  # librosa warns when it falls back from soundfile to audioread
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", FutureWarning)
            samples, rate = librosa.load(path)
    except Exception as exc:  # OSWorld treats any decoding failure as "no audio"
        log.info("compare_audios: cannot decode %s: %s", path, exc)
        return None
    return None if samples.shape[0] == 0 else (samples, rate)


def _distance(first: Samples, second: Samples) -> float:
    """Cosine distance of two MFCC frames (scipy's, as OSWorld; NaN for a silent frame)."""
    from scipy.spatial.distance import cosine

    return float(cosine(first, second))


def compare_audios(audio_path_1: AudioPath | None, audio_path_2: AudioPath | None) -> float:
    """Similarity in (0, 1]: `exp(-d)` where d is the DTW distance (fastdtw, cosine distance between
    MFCC frames, each MFCC coefficient normalised to max |value| 1 over time) divided by the
    alignment path's length.

    A None / empty path scores 0.0; two files that both fail to decode (or hold no samples) score
    1.0, one such file 0.0; a failing MFCC extraction scores 0.0. Silent audio gives NaN (scored 0
    by `evaluate`), as in OSWorld.
    """
    if not audio_path_1 or not audio_path_2:
        return 0.0
    import librosa
    from fastdtw import fastdtw

    first, second = _load(audio_path_1), _load(audio_path_2)
    if first is None or second is None:
        return 1.0 if first is None and second is None else 0.0
    try:
        mfcc1 = librosa.feature.mfcc(y=first[0], sr=first[1])
        mfcc2 = librosa.feature.mfcc(y=second[0], sr=second[1])
    except Exception as exc:  # OSWorld scores any MFCC failure 0
        log.info("compare_audios: MFCC extraction failed: %s", exc)
        return 0.0
    mfcc1 = librosa.util.normalize(mfcc1, axis=1)
    mfcc2 = librosa.util.normalize(mfcc2, axis=1)
    distance, path = fastdtw(mfcc1.T, mfcc2.T, dist=_distance)
    normalised = distance / len(path) if len(path) else math.inf
    return float(np.exp(-normalised))
