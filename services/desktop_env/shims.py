"""Small executables in the env's private `bin/` directory, first on every child's PATH.

- `desktop-terminal`: the terminal ctrl+alt+t opens: an xterm titled "Terminal" (title changes by
  programs are disabled, so `wmctrl`/`activate_window("Terminal")` always finds it), logging its
  output for `GET /terminal`, with gnome-terminal's ctrl+shift+c / ctrl+shift+v clipboard keys.
- `python`, `python3`: this server's interpreter (it has pyautogui), as OSWorld images provide.
- `gnome-terminal` (only when not installed): OSWorld tasks start it; opens `desktop-terminal`.
- `sudo` (only when not installed): runs the command as the current user, after checking the
  `-S` password when not root, so `echo {CLIENT_PASSWORD} | sudo -S ...` works.
- `google-chrome`, `chromium` (when Debian's chromium is installed): chromium with Chrome's profile
  directory `~/.config/google-chrome` (OSWorld's Chrome getters read `Default/Preferences`,
  `Bookmarks`, `History` there), offline-friendly flags, the renderer's accessibility tree on, and
  `--no-sandbox` only as root or without user namespaces (Chromium's sandbox cannot run then); other
  arguments pass through (tasks add `--remote-debugging-port=1337`), a task's own `--user-data-dir`
  wins (it comes later). It runs the binary by its `chrome` hard link (`CHROME_BINARY`) when there,
  so OSWorld's `pkill chrome` stops the browser.
- `desktop-app-ready APP` (when Debian's python3 has pyatspi): exit 0 once the app's focused widget
  is drawn (`app_ready`, `painted`); example tasks wait for slow apps with it.
- `nautilus` (only when not installed): OSWorld tasks open folders with it; runs pcmanfm, the file
  manager of the desktop's mime settings.
- `code` (when code-server and chromium are installed, `common.code_server`): VS Code's command line
  on one code-server per env shown in a Chromium app window (`vscode_cli`, `vscode_server`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from common.code_server import browser_binary, code_server_binary

_XTERM_RESOURCES = (
    "XTerm*allowTitleOps: false",
    "XTerm*faceName: DejaVu Sans Mono",
    "XTerm*faceSize: 11",
    # ctrl+shift+c/v as in gnome-terminal; plain ctrl+v pastes too, because the agent types `<`, `>`
    # and non-ASCII text through the clipboard with ctrl+v (the key GUI apps use).
    "XTerm*VT100.translations: #override Shift Ctrl <Key>C: copy-selection(CLIPBOARD)\\n"
    "Shift Ctrl <Key>V: insert-selection(CLIPBOARD)\\n"
    "Ctrl <Key>V: insert-selection(CLIPBOARD)",
)

_GNOME_TERMINAL = """\
#!/bin/sh
# gnome-terminal stand-in for OSWorld tasks: opens the env's terminal detached, like gnome-terminal.
max=""
while [ $# -gt 0 ]; do
  case "$1" in
    --maximize) max="-maximized" ;;
    --working-directory=*) cd "${1#*=}" || exit 1 ;;
    --working-directory) shift; cd "$1" || exit 1 ;;
    --|-x|--execute) shift; desktop-terminal $max -e "$@" >/dev/null 2>&1 & exit 0 ;;
    -e|--command) shift; desktop-terminal $max -e sh -c "$1" >/dev/null 2>&1 & exit 0 ;;
  esac
  shift
done
desktop-terminal $max >/dev/null 2>&1 &
"""

_SUDO = """\
#!/bin/sh
# sudo stand-in (sudo is not installed): runs the command as the current user.
read_password=""
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    -S|--stdin) read_password=1 ;;
    -u|-g|-p|-C|-h|-r|-t|-U|-T|-D) shift ;;
    -*) ;;
    *) break ;;
  esac
  shift
done
if [ -n "$read_password" ] && [ "$(id -u)" != 0 ]; then
  IFS= read -r password
  [ "$password" = {password} ] || {{ echo "Sorry, try again." >&2; exit 1; }}
fi
[ $# -gt 0 ] || exit 0
exec "$@"
"""


_CHROME = """\
#!/bin/sh
# Chrome for OSWorld tasks: Debian's chromium with Chrome's profile directory and offline flags.
# Chromium's own sandbox needs user namespaces: without them (root, or a container that forbids
# them) it would refuse to start.
if [ "$(id -u)" = 0 ] || ! unshare --user true 2>/dev/null; then set -- --no-sandbox "$@"; fi
# What Debian's /usr/bin/chromium wrapper adds (e.g. --disable-dev-shm-usage when /dev/shm is small,
# as in a sandboxed env), for when the binary is run directly by its `chrome` name.
CHROMIUM_FLAGS=""
for file in /etc/chromium.d/*; do
  case "$file" in */README|*.dpkg*) ;; *) [ -f "$file" ] && . "$file" ;; esac
done
# LocalNetworkAccessChecks off: Chromium 156 otherwise writes `profile.default_content_setting_values`
# (`has_migrated_local_network_access`) ~10 s after it starts, the very key whose presence OSWorld's
# `data_delete_automacally` getter reads as "delete data on close is set" (chrome/99146c54 paid any agent
# that let the browser run: tests/desktop_env/test_shims.py).
exec {chromium} $CHROMIUM_FLAGS --user-data-dir="$HOME/.config/google-chrome" --no-first-run \\
  --no-default-browser-check --disable-background-networking --disable-component-update --disable-sync \\
  --password-store=basic --force-renderer-accessibility \\
  --disable-features=Translate,MediaRouter,LocalNetworkAccessChecks "$@"
"""

#: Debian's chromium binary under the name `chrome` (a hard link made by scripts/setup.sh and the
#: image), so OSWorld's `pkill chrome` ends the browser as it does Google Chrome on OSWorld's VMs.
CHROME_BINARY = "/usr/lib/chromium/chrome"

_NAUTILUS = """\
#!/bin/sh
# nautilus stand-in for OSWorld tasks: the desktop's file manager (pcmanfm); options are dropped.
for arg in "$@"; do case "$arg" in -*) ;; *) exec pcmanfm "$arg" ;; esac; done
exec pcmanfm "$HOME"
"""


_APP_READY = """\
#!/bin/sh
# desktop-app-ready APP: exit 0 once APP's focused widget is drawn (AT-SPI focus, then its pixels).
extents=$({atspi_python} {app_ready} "$@") || exit 1
exec {python} -m services.desktop_env.painted $extents
"""
APP_READY_PYTHON = "/usr/bin/python3"  # Debian's interpreter, which has python3-pyatspi


_CODE = """\
#!/bin/sh
# VS Code's `code` command for OSWorld tasks: code-server in a Chromium app window (vscode_cli.py).
exec {python} -m services.desktop_env.vscode_cli {code_server} {browser} "$@"
"""


def _write_executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def terminal_script(log_path_pattern: str) -> str:
    """Script text of `desktop-terminal`; `log_path_pattern` may use `$$` (the xterm's pid)."""
    resources = " ".join(f"-xrm {shlex.quote(r)}" for r in _XTERM_RESOURCES)
    return (
        "#!/bin/sh\n"
        "# The env's terminal (ctrl+alt+t): exec keeps this pid, so the log is named after the xterm.\n"
        f'exec xterm -T Terminal {resources} -l -lf "{log_path_pattern}" "$@"\n'
    )


def install(bin_dir: Path, log_path_pattern: str, client_password: str) -> None:
    """Write the shims into `bin_dir` (created if needed)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    _write_executable(bin_dir / "desktop-terminal", terminal_script(log_path_pattern))
    python = f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n'
    for name in ("python", "python3"):
        _write_executable(bin_dir / name, python)
    if shutil.which("gnome-terminal") is None:
        _write_executable(bin_dir / "gnome-terminal", _GNOME_TERMINAL)
    chromium = CHROME_BINARY if os.access(CHROME_BINARY, os.X_OK) else shutil.which("chromium")
    if chromium is not None:
        for name in ("google-chrome", "chromium"):
            _write_executable(bin_dir / name, _CHROME.format(chromium=shlex.quote(chromium)))
    if Path(APP_READY_PYTHON).exists():
        ready = Path(__file__).with_name("app_ready.py")
        _write_executable(bin_dir / "desktop-app-ready", _APP_READY.format(
            atspi_python=APP_READY_PYTHON, app_ready=shlex.quote(str(ready)), python=shlex.quote(sys.executable)))
    if shutil.which("nautilus") is None and shutil.which("pcmanfm") is not None:
        _write_executable(bin_dir / "nautilus", _NAUTILUS)
    if shutil.which("sudo") is None:
        _write_executable(bin_dir / "sudo", _SUDO.format(password=shlex.quote(client_password)))
    code_server, browser = code_server_binary(), browser_binary()
    if code_server is not None and browser is not None:
        _write_executable(bin_dir / "code", _CODE.format(python=shlex.quote(sys.executable), browser=shlex.quote(
            browser), code_server=shlex.quote(str(code_server))))
