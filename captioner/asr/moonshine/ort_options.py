"""ONNX Runtime session options of the built-in model's graphs (encoder, float and 8-bit decoders).

Below every module that opens one of them: the model (:mod:`captioner.asr.moonshine.model`) and
the 8-bit copy's load check (:mod:`captioner.asr.moonshine.int8`, run while
:mod:`captioner.asr.moonshine.prepare` prepares the model).
"""

from __future__ import annotations


def session_options(prepack: bool = False):
    """ONNX Runtime options of both graphs: one intra-op thread, no inter-op pool.

    One thread: the pool bought nothing on 2 cores and spun the second one; the finals
    and the partials each run on their own thread instead. Prepacking off unless ``prepack``:
    it keeps a packed copy of every MatMul weight (measured 2026-12-02 on the float decoder:
    resident memory 343 -> 400 MB, 463 MB at the peak while loading; a single step ~9 %
    faster, and a step on 2 tokens ~1.2 steps instead of ~2.3, which the hotwords' batch of
    2 needs: :data:`~captioner.asr.moonshine.hotword_speculation.SPECULATE`; so a float decoder is
    prepacked only once a hotword list is set, :meth:`~captioner.asr.moonshine.model.MoonshineModel.hotwords`). The 8-bit
    decoder (:mod:`~captioner.asr.moonshine.int8`) is always prepacked: its fast kernels
    run on the packed form only (a step ~20x slower without).
    Memory patterns off: ONNX Runtime caches one allocation plan per set of input shapes and
    never drops one, and here every line has its own length (encoder) and every decoder step its
    own past length, so an all-day session kept adding plans (issue 30; onnxruntime#11118); the
    arena would still keep its blocks.
    Arena off: it kept the largest activations ever needed (an encoder run on a 30 s line) for
    the rest of the process; without it the buffers go through ``malloc``, which
    :mod:`captioner.heap` makes give them back (issue 40: a live run 449 -> 394 MB resident).
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    opts.add_session_config_entry("session.disable_prepacking", "0" if prepack else "1")
    opts.enable_mem_pattern = False
    opts.enable_cpu_mem_arena = False
    return opts
