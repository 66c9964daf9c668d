"""OSWorld's Chrome tasks stop the browser with `pkill chrome` before reading its profile (11 of
its chrome examples): the env's `google-chrome` must run as a process named `chrome`, or the
getters read a profile the browser has not flushed."""

from __future__ import annotations

from common.env_client import DesktopEnvClient
from common.polling import wait_until

#: The browser processes of this env's profile (the home is the env's own), by name.
BROWSERS = 'pgrep -f -- "--user-data-dir=$HOME/.config/google-chrome" | xargs -r ps -o comm= -p'


def test_pkill_chrome_ends_the_envs_browser(env: DesktopEnvClient) -> None:
    env.execute("google-chrome about:blank >/dev/null 2>&1 &", shell=True)

    def names() -> list[str]:
        return (env.execute(BROWSERS, shell=True).output or "").split()

    running = wait_until(lambda: names() or None, 60, "google-chrome to start")
    assert set(running) == {"chrome"}, running  # the browser and its children, as on OSWorld's VMs
    env.execute("pkill chrome", shell=True)
    wait_until(lambda: not names(), 30, "pkill chrome to end the browser")


def test_reset_stops_the_envs_browser(env: DesktopEnvClient) -> None:
    """Chromium overwrites its environment block (process titles), losing the env's marker; `/reset`
    still finds it by its profile directory, so no browser outlives its rollout."""
    env.execute("google-chrome about:blank >/dev/null 2>&1 &", shell=True)

    def names() -> list[str]:
        return (env.execute(BROWSERS, shell=True).output or "").split()

    wait_until(lambda: names() or None, 60, "google-chrome to start")
    env.reset()
    assert names() == []
