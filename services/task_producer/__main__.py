"""`python -m services.task_producer`: serve the producer API with uvicorn."""

from __future__ import annotations

import uvicorn

from common.service import setup_logging
from common.settings import load_settings
from services.task_producer.api import create_app
from services.task_producer.settings import ProducerSettings


def main() -> None:
    """Read settings from the environment and serve until SIGINT/SIGTERM."""
    settings = load_settings(ProducerSettings)  # SystemExit naming a bad setting
    setup_logging(settings.log_level)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")


if __name__ == "__main__":
    main()
