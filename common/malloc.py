"""glibc malloc settings for processes that move large buffers (request bodies, screenshots).

CPython hands every object above 512 bytes to the C allocator. With glibc's defaults, a buffer of
128 KiB or more is its own `mmap` (returned to the kernel at `free`), and freed memory at the top of the
heap beyond 128 KiB is given back (`brk`/trim): a process that keeps allocating and freeing buffers of
64 KiB-4 MiB (the gateway relaying a 4 MB body in ASGI chunks; a screenshot per step) takes fresh pages
from the kernel, page faults and zeroing included, for nearly every buffer. Measured on the gateway
relaying 4 MB requests (`bench/gateway_overhead.py`): 5.1 ms of CPU per request with the defaults,
3.1 ms with these settings.

`keep_freed_memory()` raises the thresholds with `mallopt` (glibc's `M_TRIM_THRESHOLD`, `M_TOP_PAD`,
`M_MMAP_THRESHOLD`; see mallopt(3)): the process keeps up to `trim_bytes` of freed heap for reuse
instead of returning it at once. The cost is that much more resident memory at most.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

# mallopt(3) parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

#: Defaults: buffers up to 32 MiB come from the heap; up to 64 MiB of freed heap is kept; the heap
#: grows by at least 16 MiB at a time.
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024
TOP_PAD_BYTES = 16 * 1024 * 1024


def keep_freed_memory(mmap_bytes: int = MMAP_THRESHOLD_BYTES, trim_bytes: int = TRIM_THRESHOLD_BYTES,
                      top_pad_bytes: int = TOP_PAD_BYTES) -> bool:
    """Apply the thresholds (bytes) to this process's glibc malloc. Returns False, changing nothing,
    where the C library has no `mallopt` (musl, macOS) or refuses a value."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        log.info("no glibc mallopt here (%s): malloc keeps its defaults", name)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = [mallopt(_M_MMAP_THRESHOLD, mmap_bytes), mallopt(_M_TRIM_THRESHOLD, trim_bytes),
               mallopt(_M_TOP_PAD, top_pad_bytes)]
    return all(result == 1 for result in applied)  # mallopt returns 1 on success
