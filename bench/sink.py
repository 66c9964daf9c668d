"""Storage sink throughput: the sink against a raw write loop into the same store, side by side in one run.

For each fill level (the store pre-filled with 0, 10,000 and 100,000 small objects, in the same run
as the measured trajectories and in other runs), in one process:

- **raw**: a plain loop writing exactly the objects the sink writes for the same events (per step a
  200 KB PNG-sized payload and the step JSON; per episode `attempt.json`, `task_config.json`,
  `final_messages.json`, `reward.txt`, `manifest.json`) into the same store directory, each with
  open + write + fsync + close, one after the other: the raw limit of the directory;
- **sink**: the same events published to a real redis-server stream (episodes interleaved, as from
  concurrent runners), then drained by a `SinkConsumer` into the local store (`file://`): the drain
  time of each published chunk is measured (publishing is not), step events/s and the ratio to raw.

Prints step events/s raw and sink, sink/raw, sink at each fill level / sink on the empty store and
the same for sink/raw (flatness; the ratio is steadier when other jobs load the disk), CPU ms per step
event of this process (all threads), and what one whole-store listing costs at that fill. With
`--s3` the same against moto's S3 server (the MinIO stand-in, its own process): raw = plain serial
`put_object`s through the minio SDK. The raw loop and the sink alternate chunk by chunk (`--chunk`).

Targets (issue 13): sink >= 0.8x raw, >= 1,000 step events/s with 200 KB screenshots to the local
store, flat from an empty store to 100,000 objects.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import keys  # noqa: E402
from common.events import EpisodeEvent, ParsedAction, StepEvent, encode_event  # noqa: E402
from common.objectstore import LocalDirStore, ObjectStore, S3Store  # noqa: E402
from common.polling import free_port, wait_until  # noqa: E402
from common.processes import stop_child  # noqa: E402
from common.redis_server import RedisServerProcess  # noqa: E402
from common.status import RolloutStatus  # noqa: E402
from services.storage_sink.consumer import SinkConsumer  # noqa: E402
from services.storage_sink.settings import SinkSettings  # noqa: E402
from services.storage_sink.writer import Put, TrajectoryWriter, _json  # noqa: E402

RUN = "bench-sink"


@dataclass(frozen=True)
class Workload:
    """The events of one measurement in stream order (interleaved episodes): each stream entry with the
    objects the sink makes of it; and the number of step events."""

    events: list[tuple[dict[bytes, bytes], list[Put]]]
    steps: int

    @property
    def objects(self) -> list[Put]:
        """Every object, in stream order."""
        return [put for _, puts in self.events for put in puts]

    def chunks(self, size: int) -> list[Workload]:
        """Consecutive pieces of at most `size` entries (`steps` counted per piece)."""
        pieces = [self.events[n:n + size] for n in range(0, len(self.events), size)]
        return [Workload(piece, sum(entry[b"type"] == b"step" for entry, _ in piece)) for piece in pieces]


def entry(event: StepEvent | EpisodeEvent, png: bytes | None = None) -> dict[bytes, bytes]:
    """The stream entry of an event (as XADD takes it and XREADGROUP gives it back)."""
    return {bytes(k): v for k, v in encode_event(event, png).items()}  # type: ignore[arg-type]


def workload(tag: str, steps: int, episode_steps: int, concurrent: int, png: bytes) -> Workload:
    """`steps` step events in episodes of `episode_steps`, `concurrent` episodes interleaved round-robin
    (start, steps..., end each); task ids `{tag}-{n}` in run `RUN`."""
    writer = TrajectoryWriter(LocalDirStore(Path(tempfile.gettempdir())))  # only builds puts, never writes
    episodes = []
    for n in range(max(1, steps // episode_steps)):
        ref: dict[str, Any] = {"run_id": RUN, "task_id": f"{tag}-{n}", "rollout_index": 0,
                               "rollout_id": f"{RUN}:{tag}-{n}:0"}
        prefix = writer.prefix(StepEvent(step=0, **ref))
        start = EpisodeEvent(phase="start", task_config={"id": f"{tag}-{n}", "instruction": "x" * 200}, **ref)
        events: list[tuple[dict[bytes, bytes], list[Put]]] = [(entry(start), [
            Put(f"{prefix}/attempt.json", _json({"attempt": 1}), "application/json"),
            Put(f"{prefix}/task_config.json", _json(start.task_config), "application/json")])]
        for step in range(episode_steps):
            action = ParsedAction(action_type="click", inputs={"x": 100, "y": 200}, code="pyautogui.click(100, 200)")
            event = StepEvent(step=step, response=f"Thought: step {step}\nAction: click(start_box='(100,200)')",
                              thought=f"step {step}", actions=[action], **ref)
            events.append((entry(event, png), writer.step_puts(prefix, event, png)))
        end = EpisodeEvent(phase="end", status=RolloutStatus.COMPLETED, reward=1.0, num_steps=episode_steps,
                           final_messages=[{"role": "assistant", "content": "done"}], **ref)
        body, manifest = writer.end_puts(prefix, end)
        events.append((entry(end), [*body, manifest]))
        episodes.append(events)
    ordered = []
    for group in range(0, len(episodes), concurrent):
        live = [iter(episode) for episode in episodes[group:group + concurrent]]
        while live:
            for it in list(live):
                item = next(it, None)
                if item is None:
                    live.remove(it)
                    continue
                ordered.append(item)
    return Workload(ordered, len(episodes) * episode_steps)


def fsync_write(path: Path, data: bytes) -> None:
    """open + write + fsync + close (the raw loop's unit)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def raw_local(root: Path, work: Workload) -> float:
    """Seconds to write every object of `work` under `root`, serially."""
    started = time.perf_counter()
    for put in work.objects:
        path = root / put.key
        path.parent.mkdir(parents=True, exist_ok=True)
        fsync_write(path, put.data)
    return time.perf_counter() - started


def raw_store(store: ObjectStore, work: Workload) -> float:
    """Seconds to `put` every object of `work` into `store`, serially."""
    started = time.perf_counter()
    for put in work.objects:
        put.run(store)
    return time.perf_counter() - started


def sink_drain(client: redis.Redis, sink: SinkConsumer, work: Workload) -> float:
    """Publish `work`'s entries, then the seconds the sink takes to drain them (publishing not timed).
    Raises: RuntimeError when an entry was not persisted (left pending or dead-lettered)."""
    pipe = client.pipeline(transaction=False)
    for entry, _ in work.events:
        pipe.xadd(keys.EVENTS_STREAM, entry)  # type: ignore[arg-type]
    pipe.execute()
    started = time.perf_counter()
    done = 0
    while done < len(work.events):
        persisted = sink.process_once()
        if persisted == 0:
            raise RuntimeError(f"sink stalled after {done} of {len(work.events)} entries")
        done += persisted
    spent = time.perf_counter() - started
    if client.xlen(keys.EVENTS_STREAM) or client.xlen(keys.DEAD_LETTER_STREAM):
        raise RuntimeError("entries left in the stream or dead-lettered")
    return spent


@dataclass
class Figures:
    """Step events/s and CPU ms (this process, all threads) per step event, raw loop and sink."""

    raw: float
    sink: float
    raw_cpu_ms: float
    sink_cpu_ms: float


def side_by_side(raw: Callable[[Workload], float], sink: Callable[[Workload], float], raw_work: Workload,
                 work: Workload, chunk: int) -> Figures:
    """Raw loop and sink measured in alternating chunks of `chunk` entries, so that load from other
    processes hits both alike."""
    raw_s = sink_s = raw_cpu = sink_cpu = 0.0
    for raw_part, part in zip(raw_work.chunks(chunk), work.chunks(chunk), strict=True):
        cpu = time.process_time()
        raw_s += raw(raw_part)
        raw_cpu += time.process_time() - cpu
        cpu = time.process_time()
        sink_s += sink(part)
        sink_cpu += time.process_time() - cpu
    return Figures(raw_work.steps / raw_s, work.steps / sink_s, 1000 * raw_cpu / raw_work.steps,
                   1000 * sink_cpu / work.steps)


def prefill(root: Path, have: int, want: int) -> None:
    """Small objects up to `want` in total (10 per trajectory), half in run `RUN`, half in other runs;
    plain writes (no fsync: only their number matters)."""
    for n in range(have, want):
        trajectory = n // 10
        run = RUN if trajectory % 2 == 0 else f"fill-run-{trajectory % 7}"
        directory = root / run / f"fill-{trajectory}_0"
        if n % 10 == 0 or n == have:
            directory.mkdir(parents=True, exist_ok=True)
        (directory / f"step_{n % 10:04d}.json").write_bytes(b'{"attempt": 1}')


def check_written(root: Path, work: Workload) -> None:
    """Every object of `work` is in the store with its bytes (by key: no listing). Raises: RuntimeError."""
    for put in work.objects:
        if (root / put.key).read_bytes() != put.data:
            raise RuntimeError(f"{put.key} differs from what the raw loop writes")


def remove_trajectories(root: Path, work: Workload) -> None:
    """Delete the measured trajectories (keeps the disk use bounded; the fill stays)."""
    for prefix in sorted({put.key.rsplit("/", 1)[0] for put in work.objects}):
        shutil.rmtree(root / prefix, ignore_errors=True)


def moto_server() -> tuple[subprocess.Popen[bytes], str]:
    """moto's S3 server in its own process on a free loopback port: (process, `host:port`)."""
    port = free_port()
    proc = subprocess.Popen([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"127.0.0.1:{port}"

    def up() -> bool:
        try:
            S3Store("probe", endpoint, "testing", "testing", retries=0)
            return True
        except Exception:
            return False

    wait_until(up, 30, "moto's S3 server to answer")
    return proc, endpoint


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000, help="step events per measurement")
    parser.add_argument("--episode-steps", type=int, default=15, help="steps per episode")
    parser.add_argument("--concurrent", type=int, default=8, help="episodes interleaved in the stream")
    parser.add_argument("--png-kb", type=int, default=200, help="screenshot payload size (KB)")
    parser.add_argument("--fill", default="0,10000,100000", help="store fill levels (objects), comma-separated")
    parser.add_argument("--chunk", type=int, default=256,
                        help="entries per alternation of raw loop and sink (published before each timed drain)")
    parser.add_argument("--batch", type=int, default=SinkSettings.model_fields["batch"].default)
    parser.add_argument("--workers", type=int, default=SinkSettings.model_fields["workers"].default)
    parser.add_argument("--s3", action="store_true", help="also measure against moto's S3 server (empty bucket)")
    parser.add_argument("--s3-steps", type=int, default=300, help="step events of the S3 measurement")
    parser.add_argument("--dir", type=Path, default=None, help="store directory (default: a temporary one)")
    args = parser.parse_args(argv)
    png = os.urandom(args.png_kb * 1000)  # incompressible, like a PNG
    levels = [int(n) for n in args.fill.split(",")]
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-sink-", dir=args.dir)))
        server = RedisServerProcess(tmp / "redis").start()
        stack.callback(server.stop)
        client = redis.Redis.from_url(server.url)
        stack.callback(client.close)
        settings = SinkSettings(redis_url=server.url, consumer="bench", batch=args.batch, workers=args.workers)

        def consumer(store: ObjectStore) -> SinkConsumer:
            sink = SinkConsumer(client, TrajectoryWriter(store), settings)
            sink.ensure_group()
            return sink

        root = tmp / "store"
        sink = consumer(LocalDirStore(root))
        stack.callback(sink.close)
        filled = [0]

        def measure(level: int) -> Figures:
            started = time.perf_counter()
            prefill(root, filled[0], level)
            if level > filled[0]:
                print(f"   (filled the store to {level} objects in {time.perf_counter() - started:.1f} s)",
                      flush=True)
            filled[0] = max(filled[0], level)
            raw_work = workload(f"raw{level}", args.steps, args.episode_steps, args.concurrent, png)
            work = workload(f"sink{level}", args.steps, args.episode_steps, args.concurrent, png)
            figures = side_by_side(partial(raw_local, root), partial(sink_drain, client, sink), raw_work, work,
                                 args.chunk)
            check_written(root, work)
            remove_trajectories(root, raw_work)
            remove_trajectories(root, work)
            return figures

        print(f"local store {root}: {args.steps} step events of {args.png_kb} KB per measurement, episodes of "
              f"{args.episode_steps} steps, {args.concurrent} interleaved; sink batch {args.batch}, "
              f"{args.workers} workers; load average {os.getloadavg()[0]:.2f}", flush=True)
        print(f"{'fill':>8} | {'raw step ev/s':>13} | {'sink step ev/s':>14} | {'sink/raw':>8} | "
              f"{'sink vs empty':>13} | {'sink/raw vs empty':>17} | {'CPU ms/step raw':>15} | "
              f"{'CPU ms/step sink':>16} | {'whole listing':>13}", flush=True)
        base: Figures | None = None
        for level in levels:
            f = measure(level)
            base = base or f
            started = time.perf_counter()
            listed = len(LocalDirStore(root).list(""))  # what one whole-store listing per episode would cost
            listing_ms = 1000 * (time.perf_counter() - started)
            print(f"{level:>8} | {f.raw:>13.0f} | {f.sink:>14.0f} | {f.sink / f.raw:>8.2f} | "
                  f"{f.sink / base.sink:>13.2f} | {f.sink / f.raw / (base.sink / base.raw):>17.2f} | "
                  f"{f.raw_cpu_ms:>15.2f} | {f.sink_cpu_ms:>16.2f} | {listing_ms:>7.0f} ms/{listed}", flush=True)
        print("targets: sink/raw >= 0.80, sink >= 1000 step events/s, flat (~1.00 vs empty) at every fill; "
              "'whole listing': one store.list('') of the filled store, what a listing per episode start "
              "or end would add")
        if args.s3:
            proc, endpoint = moto_server()
            stack.callback(stop_child, proc, 5.0)
            raw_work = workload("s3raw", args.s3_steps, args.episode_steps, args.concurrent, png)
            work = workload("s3sink", args.s3_steps, args.episode_steps, args.concurrent, png)
            s3_sink = consumer(S3Store(f"sink-{free_port()}", endpoint, "testing", "testing"))
            stack.callback(s3_sink.close)
            f = side_by_side(partial(raw_store, S3Store(f"raw-{free_port()}", endpoint, "testing", "testing")),
                             partial(sink_drain, client, s3_sink), raw_work, work, args.chunk)
            print(f"S3 (moto server, {args.s3_steps} step events): raw serial puts {f.raw:.0f} step ev/s, "
                  f"sink {f.sink:.0f} step ev/s, sink/raw {f.sink / f.raw:.2f}")
        print(f"load average after the run {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
