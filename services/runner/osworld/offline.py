"""Which OSWorld tasks cannot run as OSWorld runs them on a machine without the internet, or without an app.

Three requirements beside the per-feature ones (`requirements.INTERNET`...), used by `support.task_requirements`
and so by `cua-rollout coverage` (a task with any of them is not counted *offline*) and `cua-rollout audit`:

- `online_setup`: a setup or postconfig command installs packages (`apt`/`apt-get` `install`/`update`,
  `pip install` of a package name, not a local wheel) or fetches a web address (`git clone`, `wget`/`curl` of
  a non-local URL). Offline the command exits non-zero and the start state (or the checker's tool) differs
  from OSWorld's VM (e.g. chrome/3299584d: `apt install jq` fails, the `jq` edit of Chrome's profile never runs);
- `online_task`: the agent must reach the web to solve the task: its instruction names a web address, or it
  is one of `ONLINE_TASKS` (checked by hand: clone a repository, stream a network video, read a live site);
- `missing_app`: the domain's application is not installed on this machine (`DOMAIN_APPS`: the binary each
  domain's tasks start), e.g. VS Code before `scripts/install_code_server.sh`, or the task uses a command the
  env cannot answer as Ubuntu does (`MISSING_COMMANDS`: `timedatectl` without systemd).
"""

from __future__ import annotations

import re
import shutil
from typing import Any

from common.code_server import code_server_binary

ONLINE_SETUP = "online_setup"
ONLINE_TASK = "online_task"
MISSING_APP = "missing_app"

EXPLANATIONS = {
    ONLINE_SETUP: "a setup command installs packages (apt/pip) or fetches from the web: offline it fails and "
                  "the start state differs from OSWorld's VM",
    ONLINE_TASK: "the agent must reach the web to solve it (a web address in the instruction, a repository to "
                 "clone, a network stream)",
    MISSING_APP: "its application is not installed on this machine, or it uses a system service the env "
                 "does not run",
}

#: Tasks the agent can only solve online whose instruction names no `http(s)://` address (by hand, from
#: reading each task of test_nogdrive.json): task id -> why.
ONLINE_TASKS: dict[str, str] = {
    "48c46dc7-ec3e-4b25-a8a2-77cf51e3f5c3": "opens GitHub's home page and Python's online documentation",
    "e2392362-125e-4f76-a2ee-524b183a3412": "its setup opens https://academicpages.github.io/ in Chrome",
}

#: Domain -> the command its tasks start (a domain not listed needs no app beyond the desktop).
DOMAIN_APPS: dict[str, str] = {
    "chrome": "chromium",
    "gimp": "gimp",
    "libreoffice_calc": "soffice",
    "libreoffice_impress": "soffice",
    "libreoffice_writer": "soffice",
    "thunderbird": "thunderbird",
    "vlc": "vlc",
    "vs_code": "code-server",
}

_INSTALL = re.compile(r"\b(apt|apt-get)\s+(-\S+\s+)*(install|update|upgrade)\b|\bpip3?\s+install\s+(?!\S*\.whl\b)(?!/)")
_FETCH = re.compile(r"\bgit\s+clone\b|\b(wget|curl)\b[^|;&]*https?://(?!(localhost|127\.0\.0\.1)[:/])")
_WEB_ADDRESS = re.compile(r"https?://(?!(localhost|127\.0\.0\.1)[:/])")


def command_text(parameters: dict[str, Any]) -> str:
    """The command of an `execute`/`command` step's parameters as one string (a list joined by spaces)."""
    command = parameters.get("command")
    if isinstance(command, list):
        return " ".join(str(part) for part in command)
    return str(command or "")


def command_needs(parameters: dict[str, Any]) -> frozenset[str]:
    """`Needs` of an `execute`/`command` step: `online_setup` when it installs packages or fetches the web."""
    text = command_text(parameters)
    return frozenset({ONLINE_SETUP}) if _INSTALL.search(text) or _FETCH.search(text) else frozenset()


def app_installed(command: str) -> bool:
    """True when `command` (a `DOMAIN_APPS` value) is installed here (code-server: `common.code_server`)."""
    if command == "code-server":
        return code_server_binary() is not None
    return shutil.which(command) is not None


#: Commands the env cannot answer as Ubuntu does, by the text that names them in a task -> why.
MISSING_COMMANDS = {
    "timedatectl": "timedatectl needs systemd's timedated, which the env does not run",
}


def task_needs(task_id: str, domain: str, instruction: str, text: str = "") -> dict[str, list[str]]:
    """Task-level requirements (`online_task`, `missing_app`) -> what in the task needs them; `text`: the
    task's JSON (searched for `MISSING_COMMANDS`)."""
    found: dict[str, list[str]] = {}
    for command, why in MISSING_COMMANDS.items():
        if command in text:
            found.setdefault(MISSING_APP, []).append(why)
    if task_id in ONLINE_TASKS:
        found[ONLINE_TASK] = [ONLINE_TASKS[task_id]]
    elif _WEB_ADDRESS.search(instruction):
        found[ONLINE_TASK] = ["its instruction names a web address"]
    app = DOMAIN_APPS.get(domain)
    if app is not None and not app_installed(app):
        found.setdefault(MISSING_APP, []).append(f"{app} is not installed")
    return found
