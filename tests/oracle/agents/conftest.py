"""The agent oracle process (official agent code in `.venv-oracle`), one per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oracle.client import Oracle

AGENT_RUNNER = Path(__file__).resolve().with_name("oracle_runner.py")


@pytest.fixture(scope="session")
def agent_oracle() -> Iterator[Oracle]:
    """The agents' official code in `.venv-oracle` (fails, never skips, when it is missing)."""
    process = Oracle(AGENT_RUNNER)
    yield process
    process.close()
