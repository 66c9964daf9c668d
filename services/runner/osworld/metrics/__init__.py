"""OSWorld metric functions, one module per OSWorld metrics module (`desktop_env/evaluators/metrics/`),
so each pairs with its oracle in the differential tests (`tests/oracle/`).

Each module registers its metrics in a module-level `METRICS` dict; `METRICS` here is their union.
`infeasible` is handled by `evaluate()` itself.
"""

from __future__ import annotations

from services.runner.osworld.metrics import (
    basic_os,
    chrome,
    docs,
    general,
    gimp,
    libreoffice,
    others,
    pdf,
    slides,
    table,
    thunderbird,
    vlc,
    vscode,
)
from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.registry import merge_registries
from services.runner.osworld.requirements import Needs

DOMAIN_MODULES = (basic_os, chrome, docs, general, gimp, libreoffice, others, pdf, slides, table, thunderbird,
                  vlc, vscode)

METRICS: dict[str, Metric] = merge_registries(DOMAIN_MODULES, "METRICS")
NEEDS: dict[str, Needs] = merge_registries(DOMAIN_MODULES, "NEEDS", required=False)
"""Metric name -> `metric(result, expected=None, **options) -> float`; metric name -> requirements."""

__all__ = ["DOMAIN_MODULES", "METRICS", "NEEDS", "Metric"]
