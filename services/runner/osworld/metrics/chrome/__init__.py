"""OSWorld `desktop_env/evaluators/metrics/chrome.py`, split by concern: `browser` (tabs, URLs,
bookmarks, extensions, page content), `profile` (cookies, history, flags, font size, desktop
shortcuts) and `documents` (PDFs, archives, HTML files)."""

from __future__ import annotations

from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.metrics.chrome import browser, documents, profile

METRICS: dict[str, Metric] = {**browser.METRICS, **profile.METRICS, **documents.METRICS}

__all__ = ["METRICS"]
