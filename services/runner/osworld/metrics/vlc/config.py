"""VLC metrics on its config file `vlcrc` (`key=value` lines; VLC writes options left at their
default as comments, `#key=value`).

Semantics of the functions of the same names in OSWorld `desktop_env/evaluators/metrics/vlc.py`:
the file is read as UTF-8 and split on "\\n"; a line *containing* `key=` sets the value to the text
after its last `=` (stripped) -- comments included, the last such line wins -- and an option never
found keeps VLC's default. An expected value given as an int (or bool) is compared as `str()`.
Each returns 1.0 or 0.0. Raises EvalError where OSWorld crashes: no file (None path), a file that
is not UTF-8, a rule without its key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.runner.osworld.crash import input_errors
from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.base import given_path, score

ConfigPath = str | Path


def read_vlcrc(path: ConfigPath | None, metric: str) -> list[str]:
    """The lines of a vlcrc (split on "\\n"). Raises: EvalError for None, a missing or non-UTF-8 file."""
    with input_errors(metric):
        return Path(given_path(path, "path")).read_bytes().decode("utf-8").split("\n")


def last_value(lines: list[str], marker: str, default: str) -> str:
    """The text after the last `=` of the last line containing `marker`, stripped; `default` when
    no line does."""
    value = default
    for line in lines:
        if marker in line:
            value = line.split("=")[-1].strip()
    return value


def _expected(rule: Any, key: str, metric: str, as_text: bool = True) -> Any:
    with input_errors(metric):
        expected = rule[key]
    return str(expected) if as_text and isinstance(expected, int) else expected


def _option_is(path: ConfigPath | None, rule: Any, metric: str, option: str, default: str) -> float:
    lines = read_vlcrc(path, metric)
    expected = _expected(rule, f"expected_{option.replace('-', '_')}", metric)
    return score(last_value(lines, f"{option}=", default) == expected)


def check_qt_bgcone(actual_config_path: ConfigPath | None, rule: Any) -> float:
    """1.0 iff `qt-bgcone` (cone in the splash screen; default "1") equals `rule["expected_qt_bgcone"]`."""
    return _option_is(actual_config_path, rule, "check_qt_bgcone", "qt-bgcone", "1")


def check_qt_max_volume(actual_config_path: ConfigPath | None, rule: Any) -> float:
    """1.0 iff `qt-max-volume` (percent; default "125") equals `rule["expected_qt_max_volume"]`."""
    return _option_is(actual_config_path, rule, "check_qt_max_volume", "qt-max-volume", "125")


def check_qt_minimal_view(actual_config_path: ConfigPath | None, rule: Any) -> float:
    """1.0 iff `qt-minimal-view` (default "0") equals `rule["expected_qt_minimal_view"]`."""
    return _option_is(actual_config_path, rule, "check_qt_minimal_view", "qt-minimal-view", "0")


def check_one_instance_when_started_from_file(actual_config_path: ConfigPath | None, rule: Any) -> float:
    """1.0 iff `one-instance-when-started-from-file` (default "1") equals
    `rule["expected_one_instance_when_started_from_file"]`."""
    return _option_is(actual_config_path, rule, "check_one_instance_when_started_from_file",
                      "one-instance-when-started-from-file", "1")


def check_global_key_play_pause(actual_config_path: ConfigPath | None, rule: Any) -> float:
    """1.0 iff whether a global play/pause hotkey is set ("1": `global-key-play-pause=` has a value,
    "0": empty or absent) equals `rule["expected_global_key_play_pause"]`."""
    metric = "check_global_key_play_pause"
    lines = read_vlcrc(actual_config_path, metric)
    expected = _expected(rule, "expected_global_key_play_pause", metric)
    set_ = "0"
    for line in lines:
        if "global-key-play-pause=" in line:
            set_ = "0" if line.split("=")[-1].strip() == "" else "1"
    return score(set_ == expected)


DEFAULT_SLIDER_COLOURS = "153;210;153;20;210;20;255;199;15;245;39;29"
_BLACKISH_BELOW = 100


def check_qt_slider_colours(actual_config_path: ConfigPath | None, rule: Any) -> float:
    """The volume slider's colours (`qt-slider-colours`: `r;g;b;...`, VLC's default when unset; a
    line merely containing `qt-slider-colours` counts). `rule["type"]`:
    `match`: 1.0 iff they equal `rule["expected_qt_slider_colours"]`; `blackish`: 1.0 iff every
    RGB triple has all components below 100 (a value that is not an integer scores 0.0). A rule
    without `type` (or without the expected colours for `match`) scores 0.0, as in OSWorld.

    Raises: EvalError for an unknown rule type. Deliberate difference: OSWorld's function then
    returns None, which is no score (its `evaluate` returns None for the task, or crashes on
    `float(None)` in a list of metrics); a malformed task gets a clear error here.
    """
    metric = "check_qt_slider_colours"
    colours = last_value(read_vlcrc(actual_config_path, metric), "qt-slider-colours", DEFAULT_SLIDER_COLOURS)
    try:  # OSWorld reads the rule inside its catch-all: a missing key scores 0
        kind = rule["type"]
        expected = rule["expected_qt_slider_colours"] if kind == "match" else None
    except (LookupError, TypeError):
        return 0.0
    if kind == "match":
        return score(colours == expected)
    if kind == "blackish":
        try:
            values = [int(part) for part in colours.split(";")]
        except ValueError:
            return 0.0
        triples = zip(values[0::3], values[1::3], values[2::3])  # noqa: B905 - a partial triple is dropped
        return score(all(all(v < _BLACKISH_BELOW for v in triple) for triple in triples))
    raise EvalError(f"{metric}: rule type must be 'match' or 'blackish', got {kind!r}")


def is_vlc_recordings_folder(actual_config_path: ConfigPath | None, rule: Any) -> float:
    """1.0 iff the first uncommented, non-blank line containing `input-record-path` sets it
    (text after the last `=`, stripped) to `rule["recording_file_path"]`; 0.0 when no line does."""
    metric = "is_vlc_recordings_folder"
    lines = read_vlcrc(actual_config_path, metric)
    expected = _expected(rule, "recording_file_path", metric, as_text=False)
    for line in lines:
        if line.startswith("#") or not line.strip():
            continue
        if "input-record-path" in line:
            return score(line.split("=")[-1].strip() == expected)
    return 0.0
