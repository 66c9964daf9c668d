"""OSWorld `desktop_env/evaluators/metrics/table.py`: spreadsheets (LibreOffice Calc .xlsx / .csv).

`compare.compare_table` checks a workbook against rules (with `workbook`, `cells`, `styles` and
`features` mirroring OSWorld's `utils.py` helpers); `text` holds the CSV and city-list checks.
"""

from __future__ import annotations

from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.metrics.table.compare import compare_table
from services.runner.osworld.metrics.table.text import compare_conference_city_in_order, compare_csv

METRICS: dict[str, Metric] = {
    "compare_table": compare_table,
    "compare_csv": compare_csv,
    "compare_conference_city_in_order": compare_conference_city_in_order,
}
