"""`python -m services.storage_sink`: consume the event stream until SIGTERM/SIGINT."""

from __future__ import annotations

import signal
import threading

from common.objectstore import open_store
from common.service import redis_client, setup_logging, start_metrics_port
from services.storage_sink.consumer import SinkConsumer
from services.storage_sink.settings import SinkSettings
from services.storage_sink.writer import TrajectoryWriter


def main() -> None:
    """Start the metrics port and consume; a signal finishes the current batch, then exits."""
    settings = SinkSettings()
    setup_logging(settings.log_level)
    start_metrics_port(settings.metrics_port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    consumer = SinkConsumer(redis_client(settings.redis_url), TrajectoryWriter(open_store(settings)), settings)
    try:
        consumer.run_forever(stop)
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
