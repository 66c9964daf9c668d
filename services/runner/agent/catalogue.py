"""Write `common/agent_catalogue.json`: the registry's agents with their observation types, action spaces and
options, for the producer's check of submitted runs (`common.agents`) and `cua-rollout agents`. Run after
adding an agent or changing its options: `python -m services.runner.agent.catalogue`
(tests/runner/agent/test_registry.py fails until then)."""

from __future__ import annotations

import json

from common.agents import CATALOGUE
from services.runner.agent.registry import describe


def catalogue_text() -> str:
    """The catalogue's JSON text: `{"agents": [entry, ...]}` in registry order."""
    return json.dumps({"agents": describe()}, indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    """Write the catalogue beside `common/agents.py` and say which agents it holds."""
    CATALOGUE.write_text(catalogue_text())
    print(f"wrote {CATALOGUE} ({', '.join(entry['name'] for entry in describe())})")


if __name__ == "__main__":
    main()
