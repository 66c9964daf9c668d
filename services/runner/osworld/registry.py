"""Merging the per-module registries of the OSWorld layer (`METRICS`, `GETTERS`, `SETUP_HANDLERS`,
`NEEDS`) into one dict per kind, refusing a name registered twice."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def merge_registries(modules: tuple[ModuleType, ...], attribute: str, required: bool = True) -> dict[str, Any]:
    """The union of `module.<attribute>` over `modules` (a missing attribute is empty unless `required`).

    Raises: ImportError naming the names and the module when a name is registered twice.
    """
    merged: dict[str, Any] = {}
    for module in modules:
        registry: dict[str, Any] = getattr(module, attribute) if required else getattr(module, attribute, {})
        clash = set(merged) & set(registry)
        if clash:
            raise ImportError(f"{attribute}: {sorted(clash)} registered twice ({module.__name__})")
        merged.update(registry)
    return merged
