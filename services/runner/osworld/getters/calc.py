"""OSWorld `desktop_env/evaluators/getters/calc.py`: values read from spreadsheets."""

from __future__ import annotations

from typing import Any

from services.runner.osworld.context import EvalContext
from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.base import Getter
from services.runner.osworld.params import require_str
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.requirements import Needs


def get_conference_city_in_order(env: EnvLike, config: dict[str, Any], ctx: EvalContext) -> list[str]:
    """`conference_city_in_order`: meant to give the third column of the host CSV `csv_path`.

    OSWorld's getter reads the CSV rows after the file is closed, so it always raises (`ValueError:
    I/O operation on closed file`, or FileNotFoundError for a missing file); no task of the
    benchmark uses it (the city task scores the workbook with `compare_conference_city_in_order`).
    Ours behaves the same: it always raises EvalError, naming OSWorld's defect, so a task that used
    it would end `eval_error` exactly where OSWorld's scoring fails.
    """
    path = require_str(config, "csv_path", "conference_city_in_order", EvalError)
    raise EvalError(f"conference_city_in_order: OSWorld's getter cannot read {path!r} (it reads the CSV after "
                    "closing it and always raises), so no score is defined")


GETTERS: dict[str, Getter] = {
    "conference_city_in_order": get_conference_city_in_order,
}
NEEDS: dict[str, Needs] = {}
