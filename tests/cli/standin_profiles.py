"""Helpers of the stand-in Thunderbird profile tests (tests/cli/test_standins.py, tests/oracle/test_standins.py):
the profile archive extracted into a home as OSWorld's setup does, firefox_decrypt's stand-in run on it as
OSWorld's evaluator does (with the desktop's python3), and a login removed as Thunderbird removes it."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

from services.cli import standins
from services.cli.standin_thunderbird import THUNDERBIRD_PROFILE

_CACHE = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/thunderbird"
#: The profile archive of thunderbird/dfac9ee8 (and 12 other thunderbird tasks) and thunderbird/15c3b339's blank one.
PROFILE_URL = f"{_CACHE}/dd84e895-72fd-4023-a336-97689ded257c/thunderbird-profile.tar.gz"
BLANK_URL = f"{_CACHE}/15c3b339-88f7-4a86-ab16-e71c58dcb01e/thunderbird-profile-blank.tar.gz"
DECRYPT_URL = ("https://raw.githubusercontent.com/unode/firefox_decrypt/3f1a6dce63056c1f64d845ff077fc1e653e757c6/"
               "firefox_decrypt.py")
#: The desktop's Python (Debian's), run without site-packages: the stand-in tool needs the standard library only.
DESKTOP_PYTHON = ["/usr/bin/python3", "-I", "-S"]


def extract_profile(home: Path, url: str = PROFILE_URL) -> Path:
    """Extract the stand-in archive of `url` into `home` (as `tar -xzf ... -C /home/user/`); returns the
    profile directory."""
    name = url.rsplit("/", 1)[-1]
    home.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(standins.standin_bytes(url, name))) as archive:
        archive.extractall(home, filter="data")
    return home / ".thunderbird" / THUNDERBIRD_PROFILE


def decrypt(home: Path, tool_dir: Path) -> subprocess.CompletedProcess[str]:
    """OSWorld's evaluator step: `python3 firefox_decrypt.py ~/.thunderbird -n -c 2 -f csv -d ,` with the
    stand-in served for firefox_decrypt's URL."""
    tool = tool_dir / "firefox_decrypt.py"
    tool.write_bytes(standins.standin_bytes(DECRYPT_URL, tool.name))
    return subprocess.run([*DESKTOP_PYTHON, str(tool), str(home / ".thunderbird"), "-n", "-c", "2", "-f", "csv",
                           "-d", ","], capture_output=True, text=True, timeout=60)


def forget_login(profile: Path, hostname: str) -> None:
    """Drop the saved logins of `hostname` from the profile's `logins.json`, as Thunderbird does when the
    account of that server is removed."""
    path = profile / "logins.json"
    store = json.loads(path.read_text())
    store["logins"] = [login for login in store["logins"] if login["hostname"] != hostname]
    path.write_text(json.dumps(store))
