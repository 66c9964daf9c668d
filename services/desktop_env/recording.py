"""Screen recording (OSWorld `/start_recording`, `/end_recording`) with ffmpeg's x11grab: H.264
MP4 at 10 frames/s with the pointer drawn (OSWorld's server records at 30).

Without ffmpeg on PATH both calls raise `RecordingUnavailable` (the server answers 501).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

from common.polling import DeadlineExceeded, GiveUp, wait_until
from services.desktop_env.processes import ChildRegistry

_START_TIMEOUT_S = 10.0


class RecordingUnavailable(RuntimeError):
    """ffmpeg is not installed, so this env cannot record its screen."""


class RecordingStateError(RuntimeError):
    """Start while recording, or end while not recording (the server answers 400)."""


class RecordingFailed(RuntimeError):
    """ffmpeg exited at start, hung at the end, or left no video (the server answers 500, as
    OSWorld's does); the message carries ffmpeg's error output."""


class ScreenRecorder:
    """One recording at a time of `display` (`width` x `height` pixels) into `path` (MP4, H.264)."""

    def __init__(self, display: str, width: int, height: int, path: Path, registry: ChildRegistry) -> None:
        self.display, self.width, self.height, self.path = display, width, height, path
        self.log_path = path.with_suffix(".log")
        self.registry = registry
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @staticmethod
    def _ffmpeg() -> str:
        ffmpeg = shutil.which("ffmpeg")
        if ffmpeg is None:
            raise RecordingUnavailable("screen recording needs ffmpeg, which is not installed in this env")
        return ffmpeg

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-1500:].strip()
        except OSError:
            return ""

    def start(self) -> None:
        """Start recording; returns once ffmpeg has opened its output file (polled, at most 10 s).

        Raises: RecordingUnavailable; RecordingStateError while a recording runs; RecordingFailed
        when ffmpeg exits or opens no output in time (it is stopped then)."""
        with self._lock:
            ffmpeg = self._ffmpeg()
            if self._process is not None and self._process.poll() is None:
                raise RecordingStateError("Recording is already in progress.")
            self.path.unlink(missing_ok=True)
            command = [ffmpeg, "-y", "-loglevel", "error", "-f", "x11grab", "-draw_mouse", "1",
                       "-framerate", "10", "-video_size", f"{self.width}x{self.height}", "-i", self.display,
                       "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", str(self.path)]
            with self.log_path.open("wb") as log_file, self.registry.spawning():
                process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                           stderr=log_file)
                self.registry.add(process)

            def opened() -> bool:
                if process.poll() is not None:
                    raise GiveUp(f"ffmpeg exited with code {process.returncode}")
                return self.path.exists()

            try:
                wait_until(opened, _START_TIMEOUT_S, "ffmpeg to open its output", interval_s=0.05)
            except (GiveUp, DeadlineExceeded) as exc:
                self._kill(process)
                raise RecordingFailed(f"Failed to start recording: {exc}. ffmpeg: {self._log_tail()}") from exc
            self._process = process

    def stop(self, timeout_s: float = 15.0) -> Path:
        """Finish the recording (ffmpeg's `q`: it writes the MP4 index) and return the MP4 path.

        Raises: RecordingUnavailable; RecordingStateError when nothing is being recorded;
        RecordingFailed when ffmpeg does not finish within `timeout_s` s or leaves no video.
        """
        with self._lock:
            self._ffmpeg()
            process, self._process = self._process, None
            if process is None or process.poll() is not None:
                raise RecordingStateError("No recording in progress to stop.")
            try:
                if process.stdin is not None:
                    process.stdin.write(b"q")
                    process.stdin.close()
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired as exc:
                self._kill(process)
                raise RecordingFailed(f"Recording process was unresponsive and had to be killed. "
                                      f"ffmpeg: {self._log_tail()}") from exc
            except BrokenPipeError:  # ffmpeg is already exiting
                process.wait(timeout=timeout_s)
            finally:
                self.registry.discard(process)
            if not self.path.exists() or self.path.stat().st_size == 0:
                raise RecordingFailed(f"Recording failed. The output file is missing or empty. "
                                      f"ffmpeg: {self._log_tail()}")
            return self.path

    def _kill(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            process.kill()
        process.wait()
        self.registry.discard(process)

    def abort(self) -> None:
        """Stop any recording without keeping it (reset, shutdown)."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()
            self.registry.discard(process)
