"""Where the env's VS Code lives: code-server (VS Code 1.139 served to a browser), installed offline by
`scripts/install_code_server.sh` into a prefix (default `/opt/cua-code-server`, or
`$CUA_CODE_SERVER_PREFIX`). The env's `code` command (`services/desktop_env/vscode_cli.py`) runs it;
OSWorld's `vs_code` domain can only run where it is installed (`vscode_available`, used by
`cua-rollout coverage`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PREFIX_VAR = "CUA_CODE_SERVER_PREFIX"
DEFAULT_PREFIX = Path("/opt/cua-code-server")
#: Debian's chromium launcher: it shows VS Code's workbench as an app window (`chromium --app=URL`).
BROWSER = "chromium"


def install_prefix() -> Path:
    """The install prefix: `$CUA_CODE_SERVER_PREFIX`, else `/opt/cua-code-server`."""
    configured = os.environ.get(PREFIX_VAR, "")
    return Path(configured) if configured else DEFAULT_PREFIX


def code_server_binary(prefix: Path | None = None) -> Path | None:
    """`<prefix>/bin/code-server` (the launcher pinned to the prefix's own Node) when it is installed
    and executable, else None. `prefix` defaults to `install_prefix()`."""
    binary = (prefix or install_prefix()) / "bin" / "code-server"
    return binary if os.access(binary, os.X_OK) else None


def browser_binary() -> str | None:
    """Absolute path of Debian's `chromium` launcher on PATH, or None."""
    return shutil.which(BROWSER)


def vscode_available() -> bool:
    """True when this machine has the env's VS Code: code-server installed by
    `scripts/install_code_server.sh` and Chromium to show it, so the env's `code` command exists."""
    return code_server_binary() is not None and browser_binary() is not None
