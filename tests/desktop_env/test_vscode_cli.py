"""The env's `code` command line: VS Code's options as OSWorld's tasks and agents pass them, parsed
into what code-server is asked (no code-server needed: `tests/desktop_env/test_vscode.py` runs it)."""

from __future__ import annotations

import pytest

from services.desktop_env.vscode_cli import UsageError, parse, version_lines
from services.desktop_env.vscode_server import VSCodeServer, _strip_position


def test_paths_resolve_against_the_callers_directory() -> None:
    request = parse(["notes.txt", "/abs/dir", "~/x.py"], "/home/user/Desktop")
    assert request.paths[:2] == ["/home/user/Desktop/notes.txt", "/abs/dir"]
    assert request.paths[2].endswith("/x.py") and not request.paths[2].startswith("~")
    assert (request.manage, request.show, request.warnings) == ([], None, [])


def test_goto_and_window_flags_short_long_and_combined() -> None:
    request = parse(["-g", "/a/b.py:12:3", "--new-window"], "/")
    assert request.goto and request.new_window and request.paths == ["/a/b.py:12:3"]
    combined = parse(["-nr", "--add", "/x"], "/")  # VS Code (minimist) splits -nr
    assert combined.new_window and combined.reuse_window and combined.add and combined.paths == ["/x"]


def test_extension_commands_go_to_code_server_with_their_values() -> None:
    # OSWorld's setup: `code --install-extension vscodeEvalExtension/eval-0.0.1.vsix`
    assert parse(["--install-extension", "ext/eval-0.0.1.vsix"], "/d").manage == [
        "--install-extension", "ext/eval-0.0.1.vsix"]
    # OSWorld's getter runs ["code", "--list-extensions", "|", "grep", "x"] without a shell: the
    # words after the option are paths VS Code ignores when listing
    listing = parse(["--list-extensions", "|", "grep", "ms-python.python"], "/")
    assert listing.manage == ["--list-extensions"]
    assert parse(["--install-extension=a.b", "--force"], "/").manage == ["--install-extension", "a.b", "--force"]
    assert parse(["--force"], "/").manage == []  # nothing to do, as in VS Code


def test_unknown_and_ignored_options_warn_and_bad_lines_are_usage_errors() -> None:
    request = parse(["--wait", "--locale", "de", "--frobnicate", "--disable-extensions", "f.txt"], "/w")
    assert request.paths == ["/w/f.txt"] and len(request.warnings) == 4
    assert "frobnicate" in request.warnings[2] and "disable-extensions" in request.warnings[3]
    with pytest.raises(UsageError, match="needs a value"):
        parse(["--install-extension"], "/")
    with pytest.raises(UsageError, match="two files"):
        parse(["--diff", "only-one"], "/")
    with pytest.raises(UsageError, match="stdin"):
        parse(["-"], "/")


def test_version_reads_like_vscodes() -> None:
    out = version_lines("4.139.1 53c2f3253bcf32886706fc023e794bbeb253c90f with Code 1.139.1\n")
    assert out == "1.139.1\n53c2f3253bcf32886706fc023e794bbeb253c90f\nx64\n"
    assert version_lines("garbage") == "garbage"


def test_window_urls_and_goto_positions() -> None:
    assert _strip_position("/a/b.txt:12:3") == "/a/b.txt" and _strip_position("/a/b:c.txt:5") == "/a/b:c.txt"
    assert _strip_position("/a/dir/") == "/a/dir/"
    assert VSCodeServer.window_url(4711, None, False) == "http://127.0.0.1:4711/"
    assert VSCodeServer.window_url(4711, "/", False) == "http://127.0.0.1:4711/?folder=/"
    url = VSCodeServer.window_url(4711, "/no such/f.py:3", True)
    # code-server's workbench opens `openFile` (a vscode-remote URI on its own host) in an empty window
    assert url.startswith("http://127.0.0.1:4711/?ew=true&payload=")
    assert "vscode-remote%3A//127.0.0.1%3A4711/no%2520such/f.py%3A3" in url and "gotoLineMode" in url
