"""The env's `code` command (installed by `shims` when code-server is, see `common.code_server`):
VS Code's command line (`code --help` of VS Code 1.139) mapped onto one code-server per env, shown in
a Chromium app window (`vscode_server.VSCodeServer`).

- `code [PATH...]`: open folders, `.code-workspace` files and files as desktop VS Code does: the first
  call starts code-server and a window; a folder or workspace then opens in a new window, files in
  the last window; no path focuses the window (or reopens the last folder, as VS Code restores it).
- `-g/--goto FILE:LINE[:COLUMN]`, `-n/--new-window`, `-r/--reuse-window`, `-a/--add FOLDER`,
  `-d/--diff A B`.
- `--install-extension ID|VSIX`, `--uninstall-extension ID`, `--list-extensions` (`--show-versions`,
  `--category`), `--force`: code-server's own extension commands on the env's extensions directory
  (`~/.vscode/extensions`). A marketplace ID needs the network (code-server asks Open VSX); a `.vsix`
  file installs offline.
- `-v/--version` prints VS Code's version, commit and architecture; `-h/--help` this summary.

Other VS Code options are accepted with a warning and ignored, as VS Code warns about options it does
not know (`--disable-extensions` among them: code-server's window has no such switch). Usage errors
print one `code: ...` line on stderr and exit 2; a code-server that does not start exits 1.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: Short flags VS Code accepts and what they stand for.
_SHORT = {"-n": "--new-window", "-r": "--reuse-window", "-g": "--goto", "-d": "--diff", "-a": "--add",
          "-w": "--wait", "-h": "--help", "-v": "--version", "-s": "--status"}
_OPEN_FLAGS = {"--new-window", "--reuse-window", "--goto", "--diff", "--add"}
#: Extension commands handed to code-server as they are; those in _MANAGE_VALUES take a value.
_MANAGE_FLAGS = {"--list-extensions", "--show-versions", "--force"}
_MANAGE_VALUES = {"--install-extension", "--uninstall-extension", "--category"}
#: VS Code options that take a value and that this command ignores (with a warning).
_IGNORED_VALUES = {"--locale", "--user-data-dir", "--extensions-dir", "--profile", "--disable-extension", "--log",
                   "--sync", "--enable-proposed-api", "--inspect-extensions", "--inspect-brk-extensions",
                   "--remove", "--merge"}
#: VS Code flags this command ignores (with a warning): they have no effect on code-server's window.
_IGNORED_FLAGS = {"--wait", "--verbose", "--disable-gpu", "--disable-lcd-text", "--disable-chromium-sandbox",
                  "--pre-release", "--update-extensions", "--status", "--prof-startup", "--telemetry",
                  "--transient", "--disable-workspace-trust", "--skip-add-to-recently-opened",
                  "--disable-extensions"}

USAGE = """\
Visual Studio Code (code-server) in this env

Usage: code [options] [paths...]

  -g --goto <file:line[:character]>  Open a file at the given line and character.
  -n --new-window                    Open a new window.
  -r --reuse-window                  Open a file or folder in the last window.
  -a --add <folder>                  Add folders to the last window.
  -d --diff <file> <file>            Compare two files with each other.
  --list-extensions                  List the installed extensions (--show-versions, --category).
  --install-extension <ext-id|path>  Install an extension (a .vsix file works offline).
  --uninstall-extension <ext-id>     Uninstall an extension.
  --force                            Update an installed extension without asking.
  -v --version                       Print the version.
  -h --help                          Print this summary.
"""


class UsageError(ValueError):
    """A command line `code` cannot run (a missing value, `--diff` without two files)."""


@dataclass
class CodeRequest:
    """A parsed `code` command line. `paths` are absolute (relative ones resolved against the
    caller's working directory; with `goto` they keep their `:LINE[:COLUMN]` suffix). `manage` holds
    code-server's extension arguments when the call manages extensions (then nothing is opened);
    `show` is `"help"` or `"version"` when the call only prints."""

    paths: list[str] = field(default_factory=list)
    goto: bool = False
    new_window: bool = False
    reuse_window: bool = False
    add: bool = False
    diff: bool = False
    manage: list[str] = field(default_factory=list)
    show: str | None = None
    warnings: list[str] = field(default_factory=list)


def _expand(argv: list[str]) -> list[str]:
    """`--opt=value` split in two, `-nr` into `-n -r`, short flags to their long names; `--` kept."""
    out: list[str] = []
    for index, arg in enumerate(argv):
        if arg == "--":
            out.extend(argv[index:])
            break
        if arg.startswith("--") and "=" in arg:
            out.extend(arg.split("=", 1))
        elif arg in _SHORT:
            out.append(_SHORT[arg])
        elif len(arg) > 2 and arg[0] == "-" and arg[1] != "-" and all(f"-{c}" in _SHORT for c in arg[1:]):
            out.extend(_SHORT[f"-{c}"] for c in arg[1:])
        else:
            out.append(arg)
    return out


def parse(argv: list[str], cwd: str) -> CodeRequest:
    """`argv` (without the program name) as a `CodeRequest`.

    Raises: UsageError for an option missing its value, `-` (read from stdin, unsupported) or
    `--diff` without exactly two files.
    """
    request = CodeRequest()
    args = _expand(argv)
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            request.paths.extend(args[index:])
            break
        if arg in _MANAGE_VALUES or arg in _IGNORED_VALUES:
            if index >= len(args):
                raise UsageError(f"option '{arg}' needs a value")
            value = args[index]
            index += 1
            if arg in _MANAGE_VALUES:
                request.manage.extend([arg, value])
            else:
                request.warnings.append(f"option '{arg}' is ignored: this env's VS Code is code-server")
        elif arg in _MANAGE_FLAGS:
            request.manage.append(arg)
        elif arg in _OPEN_FLAGS:
            setattr(request, arg[2:].replace("-", "_"), True)
        elif arg in ("--help", "--version"):
            request.show = request.show or arg[2:]
        elif arg in _IGNORED_FLAGS:
            request.warnings.append(f"option '{arg}' is ignored: this env's VS Code is code-server")
        elif arg == "-":
            raise UsageError("reading from stdin ('-') is not supported")
        elif arg.startswith("-"):
            request.warnings.append(f"'{arg.lstrip('-')}' is not in the list of known options and is ignored")
        else:
            request.paths.append(arg)
    if request.manage and not {"--install-extension", "--uninstall-extension", "--list-extensions"} & set(
            request.manage):
        request.manage = []  # --force / --show-versions alone do nothing, as in VS Code
    request.paths = [os.path.join(cwd, os.path.expanduser(p)) for p in request.paths]
    if request.diff and len(request.paths) != 2 and not request.manage and request.show is None:
        raise UsageError("--diff needs exactly two files")
    return request


def version_lines(code_server_version: str) -> str:
    """VS Code's `--version` output (version, commit, architecture) from code-server's
    `X.Y.Z <commit> with Code A.B.C` (returned unchanged when it does not read so)."""
    words = code_server_version.split()
    if "Code" not in words[:-1] or len(words) < 2:
        return code_server_version
    return f"{words[words.index('Code') + 1]}\n{words[1]}\nx64\n"


def main(argv: list[str]) -> int:
    """Run `code`: `argv` is `[CODE_SERVER, BROWSER, *code_arguments]` (the shim passes the installed
    launchers' absolute paths first: inside the env, `chromium` on PATH is the Chrome shim). Returns
    the exit code."""
    from services.desktop_env.vscode_server import ServerError, VSCodeServer

    if len(argv) < 2:
        print("usage: python -m services.desktop_env.vscode_cli CODE_SERVER BROWSER [code arguments]",
              file=sys.stderr)
        return 2
    code_server, browser = Path(argv[0]), argv[1]
    try:
        request = parse(argv[2:], os.getcwd())
    except UsageError as exc:
        print(f"code: {exc}", file=sys.stderr)
        return 2
    for warning in request.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    if request.show == "help":
        print(USAGE, end="")
        return 0
    server = VSCodeServer(Path(os.environ.get("HOME", "/")), code_server, browser)
    try:
        if request.show == "version":
            print(version_lines(server.cli(["--version"], capture=True).stdout), end="")
            return 0
        if request.manage:
            return server.cli(request.manage).returncode
        server.open(request)
    except ServerError as exc:
        print(f"code: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
