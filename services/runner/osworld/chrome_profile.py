"""Where Chrome keeps its state in the env: OSWorld's Linux paths (`desktop_env/evaluators/getters/
chrome.py`, `controllers/setup.py`), which OSWorld builds from `$HOME` in the VM (`/home/user`).

The env pod runs `google-chrome` (Debian chromium behind a shim) with
`--user-data-dir=/home/user/.config/google-chrome`, so these paths hold there as on OSWorld's VMs.
"""

from __future__ import annotations

HOME = "/home/user"
USER_DATA_DIR = f"{HOME}/.config/google-chrome"
PROFILE_DIR = f"{USER_DATA_DIR}/Default"

PREFERENCES = f"{PROFILE_DIR}/Preferences"
"""JSON: search engine, font sizes, profile name, extensions, startup, privacy settings."""
BOOKMARKS = f"{PROFILE_DIR}/Bookmarks"
"""JSON: `roots` with `bookmark_bar`, `other`, `synced` folders."""
HISTORY = f"{PROFILE_DIR}/History"
"""SQLite: tables `urls`, `visits`, ..."""
COOKIES = f"{PROFILE_DIR}/Cookies"
"""SQLite: table `cookies` (`creation_utc`, `host_key`, ...)."""
LOCAL_STATE = f"{USER_DATA_DIR}/Local State"
"""JSON: browser-wide state, e.g. `browser.enabled_labs_experiments` (chrome://flags)."""
DESKTOP = f"{HOME}/Desktop"
"""Where Chrome's "Create shortcut" puts `.desktop` files (OSWorld's `get_vm_desktop_path` on Linux)."""
