"""OSWorld `desktop_env/evaluators/metrics/libreoffice.py`: LibreOffice-wide settings."""

from __future__ import annotations

from services.runner.osworld.metrics.base import Metric

METRICS: dict[str, Metric] = {}
