"""Services never import each other (shared code lives in `common/`): every `services.<other>` import in a
service's code, read with `ast`, must be one of the few known, explained exceptions."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "services"
#: (importing service, imported service): why it may.
ALLOWED = {
    ("cli", "desktop_env"): "`up`/`demo` launch local desktops in the CLI's process",
    ("cli", "runner"): "`coverage`, `audit` and `rescore` use the runner's OSWorld layer",
    ("runner", "desktop_env"): "the runner's `local` env provider launches desktops in its own process",
}


def cross_imports() -> set[tuple[str, str]]:
    """(importing service, imported service) for every import of another service's module."""
    found: set[tuple[str, str]] = set()
    for path in SERVICES.rglob("*.py"):
        owner = path.relative_to(SERVICES).parts[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                parts = name.split(".")
                if parts[0] == "services" and len(parts) > 1 and parts[1] != owner:
                    found.add((owner, parts[1]))
    return found


def test_services_import_only_their_own_code_and_common() -> None:
    unexpected = cross_imports() - set(ALLOWED)
    assert not unexpected, f"services importing each other (move shared code to common/): {sorted(unexpected)}"
    assert set(ALLOWED) <= cross_imports()  # an exception no longer needed leaves the list
