"""Give the C heap's free memory back to the system (glibc), so a live session stays small.

Each decode of the default model allocates its activations afresh: an encoder run on a 30 s
line needs tens of MB (attention over ~1200 frames), a decoder step a few hundred KB. With
ONNX Runtime's arena off (:func:`captioner.asr.moonshine_model.session_options`) those
buffers go through ``malloc``; two glibc defaults would still keep them resident:

* the mmap threshold grows to the largest block freed (up to 32 MiB), after which big
  buffers come from the heap and stay there, fragmented; :func:`tune` fixes it at
  :data:`MMAP_THRESHOLD` so a buffer of 1 MiB or more is always mapped and unmapped;
* free memory in the heap's middle is only returned by ``malloc_trim``; :func:`trim` calls it
  at most every :data:`TRIM_EVERY_S` seconds (the backend does after a completed line).

Measured 2026-12-06 (2-core machine; a live one-source run over ``bench/voice_sets.py``'s set 1
at 4x, no GUI): resident memory 449 MB (arena on, glibc defaults) -> 428 MB (arena off, fixed
threshold) -> 394 MB after one trim. Elsewhere (macOS, Windows, musl) both calls do nothing.
No Qt, no ONNX Runtime.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time

#: Blocks of at least this many bytes are mapped (and unmapped when freed) rather than carved
#: from the heap: glibc's ``M_MMAP_THRESHOLD``, fixed (glibc's default starts at 128 KiB and
#: grows up to 32 MiB as big blocks are freed). A decoder step's biggest buffers (the logits,
#: 128 KiB; the self-attention cache) stay below it, an encoder run's activations above it.
MMAP_THRESHOLD = 1 << 20
#: Least seconds between two ``malloc_trim`` calls (one takes ~1-3 ms on a 100 MB heap).
TRIM_EVERY_S = 10.0
_M_MMAP_THRESHOLD = -3  # glibc malloc.h

_lock = threading.Lock()
_last_trim = float("-inf")
_libc = None
_tuned = False


def _glibc():
    """The C library when it is glibc (it has ``mallopt``, ``malloc_trim``), else None."""
    global _libc
    if _libc is None:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc = lib if hasattr(lib, "malloc_trim") and hasattr(lib, "mallopt") else False
        except OSError:
            _libc = False
    return _libc or None


def tune() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` bytes, once per process.

    ``CAPTIONER_HEAP_TUNE=0`` in the environment leaves glibc's default (the test suite's own
    process sets it: its memory tests compare the resident size of one long-lived process, whose
    earlier tests load the model; ``tests/test_heap.py`` checks the tuning in fresh processes).

    Returns:
        True when glibc took it (now or earlier), False elsewhere or when switched off.
    """
    global _tuned
    libc = _glibc()
    if libc is None or os.environ.get("CAPTIONER_HEAP_TUNE", "1") == "0":
        return False
    with _lock:
        if not _tuned:
            _tuned = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    return _tuned


def trim(force: bool = False) -> bool:
    """Return the heap's free pages to the system (``malloc_trim(0)``), at most every
    :data:`TRIM_EVERY_S` seconds unless ``force``; safe from any thread.

    Returns:
        True when a trim ran.
    """
    global _last_trim
    libc = _glibc()
    if libc is None:
        return False
    now = time.monotonic()
    with _lock:
        if not force and now - _last_trim < TRIM_EVERY_S:
            return False
        _last_trim = now
    libc.malloc_trim(0)
    return True
