"""The docs' CLI parts (README and docs/) are true: every `cua-rollout` command line in its code blocks parses as
written (the command exists, its options exist, arguments and values fit), every command and option
is documented, and the scripted-solution example is the repository's real task and script."""

from __future__ import annotations

import json
import re
import shlex

import pytest
import typer

from services.cli.main import app
from tests.docs.docs_text import ROOT, all_docs, page

DOCS = all_docs()
CLI_CALL = re.compile(r"\.venv/bin/cua-rollout\b([^|>;&)#]*)")


def code_blocks() -> list[str]:
    """The text of every fenced code block of the README and docs/."""
    return DOCS.split("```")[1::2]


def readme_calls() -> list[list[str]]:
    """Arguments of every `cua-rollout ...` call in the docs' code blocks (shell syntax removed)."""
    calls = []
    for block in code_blocks():
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"<(\w+)>", r"\1", line)  # placeholders such as <run_id> are one argument
            for match in CLI_CALL.finditer(line):
                calls.append(shlex.split(match.group(1)))
    return calls


def test_the_readme_shows_the_cli() -> None:
    called = {args[0] for args in readme_calls() if args and not args[0].startswith("-")}
    assert {"up", "submit", "watch", "stats", "runs", "cancel", "envs", "queues", "trajectory"} <= called


@pytest.mark.parametrize("args", readme_calls(), ids=lambda args: " ".join(args) or "(none)")
def test_every_readme_command_parses_as_written(args: list[str]) -> None:
    group = typer.main.get_command(app)
    root = group.make_context("cua-rollout", list(args), resilient_parsing=True)
    if not args or args[0].startswith("-"):  # `cua-rollout --version`: a root option
        assert args == [] or all(a in ("--version", "--help") for a in args)
        return
    command = group.get_command(root, args[0])  # type: ignore[attr-defined]
    assert command is not None, f"the docs call unknown command {args[0]!r}"
    command.make_context(args[0], list(args[1:]), parent=root)  # raises on unknown options or bad values


def test_every_command_and_option_is_documented() -> None:
    group = typer.main.get_command(app)
    missing = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        if f"`{name}" not in DOCS:
            missing.append(name)
        for param in command.params:
            missing += [f"{name} {opt}" for opt in param.opts if opt.startswith("--") and opt != "--help"
                        and f"`{opt}" not in DOCS]
    assert not missing, f"the docs lack: {missing}"


def test_the_scripted_solution_example_is_the_real_task_and_script() -> None:
    section = page("agents.md").split("## Scripted solutions", 1)[1].split("\n## ", 1)[0]
    blocks = [json.loads(b.removeprefix("json\n")) for b in section.split("```")[1::2] if b.startswith("json\n")]
    task = json.loads((ROOT / "examples" / "tasks" / "os" / "os-make-notes-dir.json").read_text())
    script = json.loads((ROOT / "examples" / "scripts" / "os-make-notes-dir.json").read_text())
    assert blocks == [task, script]
