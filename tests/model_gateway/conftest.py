"""Fixtures of the gateway tests: a scripts directory and two scripted replicas."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.servers import serve_app


@pytest.fixture()
def scripts_dir(tmp_path: Path) -> Path:
    (tmp_path / "a.json").write_text(json.dumps({"instruction": "Rename the folder", "replies": ["R0", "R1"]}))
    return tmp_path


@pytest.fixture()
def replicas(scripts_dir: Path) -> Iterator[list[str]]:
    """Two scripted replicas serving versions v0 and v1."""
    with ExitStack() as stack:
        yield [stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(
            scripts_dir=scripts_dir, model_version=f"v{i}")))) for i in range(2)]
