"""common.malloc against the real glibc of this machine: buffers of MBs reuse freed heap instead of
taking fresh pages from the kernel (counted as minor page faults, not timed)."""

from __future__ import annotations

import subprocess
import sys

_CHURN = """
import resource, sys
from common.malloc import keep_freed_memory
if sys.argv[1] == "tuned":
    assert keep_freed_memory()
for _ in range(20):  # warm up
    bytearray(1_000_000)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(500):
    buffer = bytes(bytearray(1_000_000))  # as uvicorn does with each chunk of a request body
    del buffer
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def page_faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _CHURN, mode], capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_freed_buffers_are_reused_instead_of_faulted_in_again() -> None:
    default, tuned = page_faults("default"), page_faults("tuned")
    assert default > 500 * 100  # glibc's defaults: each 1 MB buffer is a fresh mmap (~245 pages faulted in)
    assert tuned < default / 20
