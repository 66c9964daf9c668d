"""The compose `.env` (common/env_file.py: `make env`, `cua-rollout init`): random secrets for every variable
docker-compose.yml requires, private to its owner, never overwritten by accident."""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from pathlib import Path

from common.env_file import SECRETS, write_env_file

ROOT = Path(__file__).resolve().parents[2]


def _values(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))


def test_every_secret_compose_requires_is_written_fresh_and_private(tmp_path: Path) -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    required = set(re.findall(r"\$\{(\w+):\?", "\n".join(lines)))
    assert required == set(SECRETS)
    first = write_env_file(tmp_path / ".env")
    assert _values(tmp_path / ".env") == first and set(first) == required
    assert stat.S_IMODE((tmp_path / ".env").stat().st_mode) == 0o600
    assert all(len(v) >= 24 for v in first.values())  # MinIO wants >= 8; tokens much longer
    second = write_env_file(tmp_path / "other.env")
    assert all(first[k] != second[k] for k in first)


def test_an_existing_file_is_kept_unless_forced(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    write_env_file(path)
    before = path.read_text()
    done = subprocess.run([sys.executable, "-m", "common.env_file", str(path)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 2 and "exists" in done.stderr and path.read_text() == before
    done = subprocess.run([sys.executable, "-m", "services.cli", "init", str(path), "--force"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert path.read_text() != before and set(_values(path)) == set(SECRETS)
