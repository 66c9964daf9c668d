"""Audio and video fixtures made locally: melodies synthesised with numpy (WAV via the standard
library, MP3 / re-encodes via ffmpeg) and test-pattern videos from ffmpeg's `testsrc2`.

Deterministic for a given seed; durations in seconds, rates in Hz, sizes in pixels.
"""

from __future__ import annotations

import subprocess
import wave
from pathlib import Path

import numpy as np

RATE = 22050


def ffmpeg(*args: str) -> None:
    """Run ffmpeg quietly. Raises: CalledProcessError with its stderr on failure."""
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *args], check=True,
                   capture_output=True, timeout=120)


def melody(seconds: float = 3.0, seed: int = 0, rate: int = RATE) -> np.ndarray:
    """Mono float samples in [-1, 1]: a sequence of notes (random pitches, 0.25 s each) with soft
    envelopes and a little noise."""
    rng = np.random.default_rng(seed)
    note = int(0.25 * rate)
    t = np.arange(note) / rate
    envelope = np.minimum(1, np.minimum(t, t[::-1]) * 40)
    notes = []
    for _ in range(int(seconds / 0.25)):
        pitch = 220 * 2 ** (rng.integers(0, 24) / 12)
        notes.append(envelope * (0.6 * np.sin(2 * np.pi * pitch * t) + 0.2 * np.sin(4 * np.pi * pitch * t)))
    samples = np.concatenate(notes) + rng.normal(0, 0.01, size=note * len(notes))
    return np.clip(samples, -1, 1)


def write_wav(samples: np.ndarray, path: Path, rate: int = RATE) -> str:
    """16-bit mono PCM WAV; returns the path as str."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((samples * 32767).astype("<i2").tobytes())
    return str(path)


def to_mp3(source: Path | str, path: Path, bitrate: str = "128k") -> str:
    """`source` encoded as MP3 (libmp3lame); returns the path as str."""
    ffmpeg("-i", str(source), "-codec:a", "libmp3lame", "-b:a", bitrate, str(path))
    return str(path)


def test_video(path: Path, seconds: float = 2.0, size: str = "160x120", rate: int = 10, vflip: bool = False,
               audio: bool = False) -> str:
    """An H.264 MP4 of ffmpeg's moving `testsrc2` pattern (optionally flipped upside down, with a
    sine soundtrack); returns the path as str."""
    args = ["-f", "lavfi", "-i", f"testsrc2=duration={seconds}:size={size}:rate={rate}"]
    if audio:
        args += ["-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}"]
    if vflip:
        args += ["-vf", "vflip"]
    args += ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "veryfast"]
    if audio:
        args += ["-c:a", "aac", "-shortest"]
    ffmpeg(*args, str(path))
    return str(path)


def frame_at(video: Path | str, seconds: float, path: Path) -> str:
    """The frame of `video` at `seconds` as an image file (format from the suffix)."""
    ffmpeg("-ss", str(seconds), "-i", str(video), "-frames:v", "1", str(path))
    return str(path)


def clip_gif(video: Path | str, start: float, seconds: float, path: Path) -> str:
    """A GIF of `seconds` of `video` from `start`."""
    ffmpeg("-ss", str(start), "-t", str(seconds), "-i", str(video), str(path))
    return str(path)
