"""The env's `google-chrome` (services/desktop_env/shims.py) leaves the profile keys OSWorld's checkers read as
the user's settings alone: a browser left running (an agent that waits) must not turn chrome/99146c54
("delete browsing data on close") into a success (issue 36's stall audit found Chromium 156 writing
`profile.default_content_setting_values` by itself ~10 s after it starts)."""

from __future__ import annotations

import json
from typing import Any

from common.env_client import DesktopEnvClient
from common.polling import wait_until

PREFERENCES = "cat $HOME/.config/google-chrome/Default/Preferences"
BROWSERS = 'pgrep -f -- "--user-data-dir=$HOME/.config/google-chrome"'


def _profile(env: DesktopEnvClient) -> dict[str, Any]:
    profile: dict[str, Any] = json.loads(env.execute(PREFERENCES, shell=True).output or "{}").get("profile", {})
    return profile


def test_a_running_browser_writes_no_content_settings_of_its_own(env: DesktopEnvClient) -> None:
    env.execute("google-chrome about:blank >/dev/null 2>&1 &", shell=True)
    # Chromium's first write of the profile (its creation time among the keys) is the one that carried the key
    wait_until(lambda: "creation_time" in _profile(env) or None, 90, "chrome to write its profile")
    env.execute("pkill chrome", shell=True)  # as OSWorld's postconfig: the browser flushes its profile on exit
    wait_until(lambda: not (env.execute(BROWSERS, shell=True).output or "").strip(), 30, "chrome to exit")
    profile = _profile(env)
    assert "creation_time" in profile and "default_content_setting_values" not in profile, \
        profile.get("default_content_setting_values")
