"""Cost of the sink verifying blobs (issue 34, point 4): a step file written from a runner's blob by a store-side
copy (what the sink did: S3 CopyObject, a hard link in a local directory) against the sink's verified copy
(`services.storage_sink.writer.Copy`: get, SHA-256, put), side by side in one run, alternating in chunks.

For each store (a local directory; with `--s3` also moto's S3 server in its own process, the MinIO stand-in):
`--blobs` random 200 KB blobs (incompressible, a screenshot's size) are put under their content keys, then each
is written to a trajectory key once by `store.copy` and once by `Copy.run`. Prints blobs/s of each, the ratio,
and the SHA-256 alone (µs per blob) for scale. No target: the verification is required; this says what it costs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common.blob_keys import blob_key  # noqa: E402
from common.objectstore import LocalDirStore, ObjectStore, S3Store  # noqa: E402
from common.polling import free_port, wait_until  # noqa: E402
from common.processes import stop_child  # noqa: E402
from services.storage_sink.writer import Copy  # noqa: E402


def measure(store: ObjectStore, blobs: int, kb: int, chunk: int) -> tuple[float, float]:
    """(store-side copies/s, verified copies/s) over `blobs` blobs of `kb` KB, alternating every `chunk`."""
    keys = []
    for _ in range(blobs):
        data = os.urandom(kb * 1024)
        keys.append(blob_key(data))
        store.put(keys[-1], data, "image/png")
    spent = {"copy": 0.0, "verified": 0.0}
    for start in range(0, blobs, chunk):
        part = list(enumerate(keys))[start:start + chunk]
        began = time.perf_counter()
        for i, key in part:
            store.copy(key, f"bench-verify/copy/image_{i:05d}.png")
        spent["copy"] += time.perf_counter() - began
        began = time.perf_counter()
        for i, key in part:
            Copy(f"bench-verify/verified/image_{i:05d}.png", key).run(store)
        spent["verified"] += time.perf_counter() - began
    return blobs / spent["copy"], blobs / spent["verified"]


def main(argv: list[str] | None = None) -> None:
    """Command line: `python bench/blob_verify.py [--blobs N] [--kb K] [--chunk C] [--s3]`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blobs", type=int, default=600)
    parser.add_argument("--kb", type=int, default=200)
    parser.add_argument("--chunk", type=int, default=50)
    parser.add_argument("--s3", action="store_true", help="also against moto's S3 server")
    args = parser.parse_args(argv)
    payload = os.urandom(args.kb * 1024)
    began = time.perf_counter()
    for _ in range(200):
        hashlib.sha256(payload).hexdigest()
    print(f"sha256 of {args.kb} KB: {(time.perf_counter() - began) / 200 * 1e6:.0f} us")
    print(f"{'store':<8} {'store-side copy /s':>20} {'verified copy /s':>18} {'verified/copy':>14}")
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        copy, verified = measure(LocalDirStore(Path(tmp)), args.blobs, args.kb, args.chunk)
        print(f"{'local':<8} {copy:>20.0f} {verified:>18.0f} {verified / copy:>14.2f}")
    if args.s3:
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "moto.server", "-p", str(port)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: _answers(port), 30, "moto's S3 server")
            store = S3Store("bench-verify", f"127.0.0.1:{port}", "testing", "testing")
            copy, verified = measure(store, max(args.blobs // 4, args.chunk), args.kb, args.chunk)
            print(f"{'s3/moto':<8} {copy:>20.0f} {verified:>18.0f} {verified / copy:>14.2f}")
        finally:
            stop_child(server, grace_s=10)


def _answers(port: int) -> bool:
    import httpx

    try:
        httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
    except httpx.HTTPError:
        return False
    return True


if __name__ == "__main__":
    main()
