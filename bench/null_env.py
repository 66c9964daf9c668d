"""BENCH-ONLY null desktop env: never used by tests of features, never by the product.

It speaks the part of the OSWorld server protocol (`common.env_client.DesktopEnvClient`) that the
runner calls during a rollout, and answers every request at once with nothing behind it:

- `GET /screenshot`: a fixed PNG (a solid 1920x1080 image by default, encoded once at start);
- `POST /execute`, `/setup/execute`: `{"status": "success", "output": "", "error": "", "returncode": 0}`;
- `POST /screen_size`: the configured size; `GET /cursor_position`: `[0, 0]`; `GET /platform`: `Linux`;
- `POST /reset`: 200 at once (`reset_ms` > 0 makes it sleep that long, without blocking other requests);
- `GET /healthz`: 200.

Several envs are served by one process (one aiohttp site per port, all on 127.0.0.1), so a
benchmark measures the orchestration's own ceiling: the runner, gateway, Redis stream and sink,
not a desktop. `python -m bench.null_env --count 2` prints one base URL per line and serves until
SIGTERM / Ctrl+C.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import signal
import sys

from aiohttp import web
from PIL import Image

EXEC_OK = {"status": "success", "output": "", "error": "", "returncode": 0}


def fixed_png(width: int, height: int, noise_kb: int = 0) -> bytes:
    """A solid-colour PNG of `width` x `height` pixels (a few KB), with a top band of random pixels of about
    `noise_kb` KB (incompressible: the PNG grows by that much, the size of a real desktop's screenshot)."""
    image = Image.new("RGB", (width, height), (40, 90, 140))
    rows = min(height, -(-noise_kb * 1024 // (3 * width)))
    if rows > 0:
        image.paste(Image.frombytes("RGB", (width, rows), os.urandom(3 * width * rows)), (0, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def make_app(png: bytes, width: int, height: int, reset_ms: float = 0.0) -> web.Application:
    """The null env's aiohttp app (see module docstring for the routes)."""

    async def screenshot(_: web.Request) -> web.Response:
        return web.Response(body=png, content_type="image/png")

    async def execute(_: web.Request) -> web.Response:
        return web.json_response(EXEC_OK)

    async def screen_size(_: web.Request) -> web.Response:
        return web.json_response({"width": width, "height": height})

    async def cursor(_: web.Request) -> web.Response:
        return web.json_response([0, 0])

    async def platform(_: web.Request) -> web.Response:
        return web.Response(text="Linux")

    async def reset(_: web.Request) -> web.Response:
        if reset_ms > 0:
            await asyncio.sleep(reset_ms / 1000.0)
        return web.json_response({"status": "success"})

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_get("/screenshot", screenshot)
    app.router.add_post("/execute", execute)
    app.router.add_post("/setup/execute", execute)
    app.router.add_post("/screen_size", screen_size)
    app.router.add_get("/cursor_position", cursor)
    app.router.add_get("/platform", platform)
    app.router.add_post("/reset", reset)
    app.router.add_get("/healthz", healthz)
    return app


async def serve(ports: list[int], width: int, height: int, reset_ms: float, ready: asyncio.Event | None = None,
                stop: asyncio.Event | None = None, noise_kb: int = 0) -> None:
    """Serve one null env per port on 127.0.0.1 until `stop` is set (forever when None); `noise_kb`: see
    `fixed_png`."""
    app = make_app(fixed_png(width, height, noise_kb), width, height, reset_ms)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    for port in ports:
        await web.TCPSite(runner, "127.0.0.1", port).start()
    if ready is not None:
        ready.set()
    try:
        await (stop or asyncio.Event()).wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    """CLI: `--ports 5001,5002` (or `--count N` free ports), `--width`, `--height`, `--reset-ms`, `--noise-kb`.
    Prints each env's base URL, then serves until SIGTERM / SIGINT."""
    from common.polling import free_port

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", default="", help="comma-separated ports (default: --count free ports)")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument("--reset-ms", type=float, default=0.0, help="simulated reset time, ms")
    parser.add_argument("--noise-kb", type=int, default=0,
                        help="random pixels in the screenshot, KB (a real desktop's PNG is ~100-1000 KB)")
    args = parser.parse_args(argv)
    ports = [int(p) for p in args.ports.split(",") if p] or [free_port() for _ in range(args.count)]
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass

    async def run() -> None:
        stop, ready = asyncio.Event(), asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        task = asyncio.create_task(serve(ports, args.width, args.height, args.reset_ms, ready, stop,
                                          args.noise_kb))
        await ready.wait()
        for port in ports:
            print(f"http://127.0.0.1:{port}", flush=True)
        await task

    asyncio.run(run())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
