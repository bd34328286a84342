"""Give the C heap's free memory back to the system (glibc), so a live session stays small.

Each decode of the default model allocates its activations afresh: an encoder run on a 30 s
line needs tens of MB (attention over ~1200 frames), a decoder step a few hundred KB. With
ONNX Runtime's arena off (:func:`captioner.asr.moonshine.ort_options.session_options`) those
buffers go through ``malloc``; two glibc defaults would still keep them resident:

* the mmap threshold grows to the largest block freed (up to 32 MiB), after which big
  buffers come from the heap and stay there, fragmented; :func:`tune` fixes it at
  :data:`MMAP_THRESHOLD` so a buffer of 1 MiB or more is always mapped and unmapped;
* free memory in the heap's middle is only returned by ``malloc_trim``; :func:`trim` calls it
  at most every :data:`TRIM_EVERY_S` seconds (the backend does after a completed line).

And one thing outside the heap: ONNX Runtime maps a model's external weights file and reads
it once to prepack the weights into its own buffers; the file's pages it read stay resident
(~26 MB for the default model's 8-bit decoder) though the packed copy is what runs.
:func:`release_file_pages` gives them back (Linux).

Measured 2026-12-06 (2-core machine; a live one-source run over ``bench/voice_sets.py``'s set 1
at 4x, no GUI): resident memory 449 MB (arena on, glibc defaults) -> 428 MB (arena off, fixed
threshold) -> 394 MB after one trim. Elsewhere (macOS, Windows, musl) the calls do nothing.
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
_MADV_DONTNEED = 4  # Linux asm-generic/mman-common.h

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


def _clean_mappings(path: str, smaps: str = "/proc/self/smaps") -> list[tuple[int, int, int]]:
    """``(start, end, rss bytes)`` of each mapping of the file ``path`` in this process that
    holds pages of the file only: none of its own (smaps ``Anonymous: 0 kB``, i.e. nothing
    written to a private copy), and some resident (``Rss`` > 0)."""
    out = []
    cur = None
    with open(smaps, encoding="utf-8", errors="replace") as f:
        for line in f:
            head = line.split(maxsplit=5)
            if head and "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
                cur = None
                if len(head) == 6 and head[5].rstrip("\n") == path:
                    lo, hi = (int(v, 16) for v in head[0].split("-"))
                    cur = [lo, hi, 0, 0]
                    out.append(cur)
            elif cur is not None and head and head[0] in ("Rss:", "Anonymous:"):
                cur[2 if head[0] == "Rss:" else 3] = int(head[1]) * 1024
    return [(lo, hi, rss) for lo, hi, rss, anon in out if anon == 0 and rss > 0]


def release_file_pages(path: str | os.PathLike) -> int:
    """Drop this process's resident pages of the file ``path`` (Linux ``madvise(MADV_DONTNEED)``
    on each of its mappings that holds no page of its own): a page touched again is read back
    from the file, unchanged, so a reader sees the same bytes either way.

    For a weights file whose tensors a session has prepacked into its own buffers (the default
    model's 8-bit decoder: 26 MB of the mapped file were resident after loading, ~4 MB of it,
    the token lookup's rows, are read again while decoding; measured 2026-12-06, issue 40).

    Returns:
        bytes that were resident in the mappings released (0 elsewhere than Linux, or when the
        file is not mapped); never raises.
    """
    libc = _glibc()
    if libc is None:
        return 0
    try:
        maps = _clean_mappings(os.path.realpath(os.fspath(path)))
    except (OSError, ValueError):
        return 0
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    freed = 0
    for lo, hi, rss in maps:
        if madvise(lo, hi - lo, _MADV_DONTNEED) == 0:
            freed += rss
    return freed
