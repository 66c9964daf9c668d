"""Print the requirements of the project's core plus the given pyproject extras, one per line, for
`pip install -r` in the image builds (deploy/docker/Dockerfile*): dependencies are installed in a
layer of their own, before the code is copied, so a code change rebuilds only the last layers.

Usage: python3 requirements.py [EXTRA ...]   (self-references `cua-rollout[a,b]` are expanded)
Exits 1 naming an extra that pyproject.toml does not define.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_SELF = re.compile(r"^cua-rollout\[([^\]]*)\]$")


def requirements(pyproject: dict, extras: list[str]) -> list[str]:
    """Core dependencies plus those of `extras` (recursively), in order, without duplicates."""
    project = pyproject["project"]
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    out: list[str] = list(project.get("dependencies", []))
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop(0)
        if extra in seen:
            continue
        if extra not in optional:
            raise SystemExit(f"requirements.py: pyproject.toml has no extra {extra!r} (known: {', '.join(optional)})")
        seen.add(extra)
        for requirement in optional[extra]:
            nested = _SELF.match(requirement.replace(" ", ""))
            if nested:
                todo.extend(name for name in nested.group(1).split(",") if name)
            elif requirement not in out:
                out.append(requirement)
    return out


if __name__ == "__main__":
    data = tomllib.loads(Path(__file__).resolve().parents[2].joinpath("pyproject.toml").read_text())
    print("\n".join(requirements(data, sys.argv[1:])))
