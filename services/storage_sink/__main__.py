"""`python -m services.storage_sink`: consume the event stream until SIGTERM/SIGINT; with several event
shards (`EVENT_SHARDS`), one consumer thread per shard of `SINK_SHARDS`, sharing the Redis client and
the object store; and a thread reconciling the runners' blobs (`SINK_RECONCILE_INTERVAL_S`, reconcile.py)."""

from __future__ import annotations

import signal
import threading

from common import keys
from common.eventshards import parse_shards
from common.objectstore import open_store
from common.service import redis_client, setup_logging, start_metrics_port
from common.settings import load_settings
from services.storage_sink.consumer import SinkConsumer
from services.storage_sink.reconcile import BlobReconciler
from services.storage_sink.settings import SinkSettings
from services.storage_sink.writer import TrajectoryWriter


def main() -> None:
    """Start the metrics port and consume; a signal finishes the current batches, then exits."""
    settings = load_settings(SinkSettings)  # SystemExit naming a bad setting
    setup_logging(settings.log_level)
    start_metrics_port(settings.metrics_port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    client, writer = redis_client(settings.redis_url), TrajectoryWriter(open_store(settings))
    consumers = [SinkConsumer(client, writer, settings, keys.events_stream(shard))
                 for shard in parse_shards(settings.shards, settings.event_shards)]
    others = [threading.Thread(target=c.run_forever, args=(stop,), name=f"sink-{c.stream}") for c in consumers[1:]]
    if settings.reconcile_interval_s > 0:  # every shard's stream holds back the cutoff, not only this sink's
        reconciler = BlobReconciler(client, writer.store, [keys.events_stream(i) for i in range(settings.event_shards)],
                                    settings.blob_ttl_s)
        others.append(threading.Thread(target=reconciler.run_forever, args=(stop, settings.reconcile_interval_s),
                                       name="sink-blob-reconcile"))
    try:
        for thread in others:
            thread.start()
        consumers[0].run_forever(stop)
    finally:
        stop.set()
        for thread in others:
            thread.join()
        for consumer in consumers:
            consumer.close()


if __name__ == "__main__":
    main()
