"""`cua-rollout agents`: the agents a run can name, with their observation types, action spaces and options
(from `common/agent_catalogue.json`, written from the runner's registry)."""

from __future__ import annotations

import json

from rich.table import Table

from common.agents import agent_catalogue
from services.cli.app import JsonOption, app, console


def agents_table() -> Table:
    """One row per agent: name, observation types, action spaces, options with their defaults."""
    table = Table(title="agents (run field `agent`; options: `agent_options`)")
    for column in ("agent", "observation types", "action spaces", "options (default)"):
        table.add_column(column)
    for name, entry in agent_catalogue().items():
        options = []
        for option, spec in entry["options"].items():
            choices = "|".join(map(str, spec["enum"])) if "enum" in spec else spec.get("type", "")
            options.append(f"{option}: {choices} ({spec.get('default')})")
        table.add_row(name, ", ".join(entry["observation_types"]), ", ".join(entry["action_spaces"]),
                      "\n".join(options) or "-")
    return table


@app.command(name="agents")
def agents_command(as_json: JsonOption = False) -> None:
    """The agents a run can use (`submit --agent NAME --agent-option KEY=VALUE`), with their observation
    types, action spaces and options; the last line is `agents: NAME, ...`."""
    catalogue = agent_catalogue()
    if as_json:
        print(json.dumps({"agents": list(catalogue.values())}, indent=2))
        return
    console.print(agents_table())
    for name, entry in catalogue.items():
        console.print(f"{name}: {entry['description']}", soft_wrap=True, markup=False, highlight=False)
    print(f"agents: {', '.join(catalogue)}")
