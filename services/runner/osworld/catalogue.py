"""Write `common/osworld_catalogue.json`: the setup step types, getter types and metrics this layer implements,
for the producer's check of submitted tasks (`common.osworld_features`). Run after adding or removing one:
`python -m services.runner.osworld.catalogue` (tests/runner/osworld/test_catalogue.py fails until then)."""

from __future__ import annotations

import json

from common.osworld_features import CATALOGUE
from services.runner.osworld.support import implemented_names


def catalogue_text() -> str:
    """The catalogue's JSON text: registry kind -> sorted names, one name per line."""
    return json.dumps({kind: sorted(names) for kind, names in implemented_names().items()}, indent=1) + "\n"


def main() -> None:
    """Write the catalogue beside `common/osworld_features.py` and say how many names it holds."""
    CATALOGUE.write_text(catalogue_text())
    counts = ", ".join(f"{len(names)} {kind}" for kind, names in implemented_names().items())
    print(f"wrote {CATALOGUE} ({counts})")


if __name__ == "__main__":
    main()
