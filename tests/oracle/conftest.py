"""Fixtures of the differential suite: one oracle process (OSWorld's own evaluator code) per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.oracle.client import Oracle


@pytest.fixture(scope="session")
def oracle() -> Iterator[Oracle]:
    """OSWorld's evaluator functions in `.venv-oracle` (fails, never skips, when it is missing)."""
    process = Oracle()
    yield process
    process.close()
