"""captioner.heap: glibc's mmap threshold fixed, the heap trimmed at most every TRIM_EVERY_S (issue 40.3)."""

from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest

from captioner import heap

glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or heap._glibc() is None, reason="glibc only")


def mapped_bytes() -> int:
    """Bytes glibc holds in mapped blocks (``mallinfo2().hblkhd``)."""

    class MallInfo2(ctypes.Structure):
        _fields_ = [(f, ctypes.c_size_t) for f in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

    fn = heap._glibc().mallinfo2
    fn.restype = MallInfo2
    return fn().hblkhd


SCENARIO = """
import sys
import numpy as np
from captioner import heap
from tests.test_heap import mapped_bytes
if sys.argv[1] == "tuned":
    assert heap.tune() and heap.tune()  # once per process, True on every call
first = np.ones(16 << 20, np.uint8)  # numpy allocates through malloc: a mapped block
del first                            # glibc's default now raises its threshold to 16 MB
before = mapped_bytes()
second = np.ones(8 << 20, np.uint8)
print((mapped_bytes() - before) >> 20)
"""


@glibc
@pytest.mark.parametrize("mode, mapped_mb", [("tuned", 8), ("default", 0)])
def test_after_tune_a_freed_big_block_does_not_raise_the_threshold(mode, mapped_mb):
    """glibc's default: freeing a mapped 16 MB block raises the threshold to 16 MB, so the next 8 MB
    block comes from the heap (and stays resident when freed). Tuned, it is mapped. In a fresh
    process: in one that ran other code, the heap may already hold free space for it."""
    import subprocess
    from pathlib import Path

    import os

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, CAPTIONER_HEAP_TUNE="1")
    out = subprocess.run([sys.executable, "-c", SCENARIO, mode], cwd=root, capture_output=True, text=True,
                         check=True, timeout=60, env=env)
    assert int(out.stdout.split()[-1]) == mapped_mb
    switched_off = subprocess.run([sys.executable, "-c", "from captioner import heap; print(heap.tune())"],
                                  cwd=root, capture_output=True, text=True, check=True, timeout=60,
                                  env=dict(os.environ, CAPTIONER_HEAP_TUNE="0"))
    assert switched_off.stdout.split()[-1] == "False"


@glibc
def test_trim_runs_at_most_every_trim_every_s(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(heap.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(heap, "_last_trim", float("-inf"))
    assert heap.trim() is True
    now[0] += heap.TRIM_EVERY_S / 2
    assert heap.trim() is False
    assert heap.trim(force=True) is True
    now[0] += heap.TRIM_EVERY_S
    assert heap.trim() is True


def test_without_glibc_both_calls_do_nothing(monkeypatch):
    monkeypatch.setattr(heap, "_libc", False)
    assert heap.tune() is False and heap.trim(force=True) is False


def test_the_default_model_runs_without_onnx_runtimes_arena():
    pytest.importorskip("onnxruntime")
    from captioner.asr.moonshine.ort_options import session_options

    for prepack in (False, True):
        opts = session_options(prepack)
        assert opts.enable_cpu_mem_arena is False and opts.enable_mem_pattern is False


@pytest.mark.skipif(not sys.platform.startswith("linux") or heap._glibc() is None, reason="Linux, glibc")
def test_release_file_pages_drops_a_files_resident_pages_and_keeps_its_bytes(tmp_path):
    import mmap

    data = np.random.default_rng(0).integers(0, 256, 8 << 20, dtype=np.uint8).tobytes()
    path = tmp_path / "weights.data"
    path.write_bytes(data)
    with open(path, "rb") as f:
        clean = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)   # MAP_PRIVATE, as ONNX Runtime maps
        written = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    assert clean[:] == data and written[:] == data  # every page read: resident
    written[4096] = (data[4096] + 1) % 256          # a private copy of one page: not the file's any more

    def resident() -> dict[str, int]:
        return {lo: rss for lo, hi, rss in heap._clean_mappings(str(path))}

    before = resident()
    assert len(before) == 1 and sum(before.values()) >= 7 << 20  # the written mapping is not "clean"
    freed = heap.release_file_pages(path)
    assert freed == sum(before.values())
    assert sum(resident().values(), 0) < 1 << 20
    assert clean[:] == data                          # read back from the file, unchanged
    assert written[4096] == (data[4096] + 1) % 256   # a mapping with its own pages is left alone
    assert heap.release_file_pages(tmp_path / "not-mapped") == 0
    clean.close()
    written.close()
