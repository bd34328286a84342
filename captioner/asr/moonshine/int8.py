"""The default model's decoder with its weights kept as the shipped 8-bit integers (issue 40).

A decoder step reads every weight of the decoder once (8 layers and the tied 32768x416 output
projection, ~39 M weights) to produce one token, so on a CPU a step is bound by memory
bandwidth, not arithmetic: in float (156 MB a step) it took 9-14 ms here. The shipped
``decoder_model_merged.ort`` stores each MatMul weight as int8 on one grid per tensor,
``W = (q + k) * s`` (int8 ``q``, a float scale ``s`` and a whole-number offset ``k``: its
``Cast -> Mul -> Add``), which :mod:`~captioner.asr.moonshine.prepare` folds into float.

:func:`quantize_decoder` rewrites the folded decoder so that every weight MatMul is ONNX
Runtime's ``MatMulNBits`` (contrib op, ``bits=8``) holding exactly the shipped integers
(scale ``s`` for every block, zero point ``-min(q + k)``), and the token embedding lookup
gathers rows of the same integers (``(q - zero point) * s``, the float weights bit for bit
up to one rounding). With ``accuracy_level=4`` ONNX Runtime quantizes the activations to
int8 per block of :data:`BLOCK` values and multiplies in int8 (AVX2/AVX-512/NEON kernels
in MLAS); that is the only difference from the float graph, and it needs the weights
prepacked (:func:`~captioner.asr.moonshine.ort_options.session_options`).

Measured 2026-12-06 on the 2-core development machine (one intra-op thread), the 48
readings of ``bench/voice_sets.py`` set 1 (its 24 lines, as cut and framed):

* tokens: 48 of 48 readings identical to the float decoder; mean token log-probability
  within 0.0009 (median) and 0.008 (max) of it (block of 32: 47/48, one flipped token);
* decoder time 8.6 -> 5.7-5.9 s (14.3 -> 9.5-9.9 ms a token, the first step included);
* peak resident memory of the process 344-469 -> 266-282 MB; the decoder's weights on
  disk 166 -> 54 MB;
* the encoder in int8 the same way was slower (5.5 -> 9.7 s, a run is a matrix product
  over ~40 frames a second, not a vector one) and changed a token: it stays float.

Where ONNX Runtime has no fast int8 kernel for the CPU (:func:`fast_int8`, checked when the
model is prepared), a step would take ~20x longer (225 ms measured with the kernel's
reference path): the decoder stays float there.
"""

from __future__ import annotations

import functools
import time

import numpy as np

#: Values per quantization block of ``MatMulNBits`` (weights and, with accuracy level 4, the
#: activations): 16 kept every token of the float decoder on set 1, 32 flipped one in 48 readings.
BLOCK = 16
#: ``MatMulNBits`` accuracy level: 4 = int8 activations and int8 products (the fast kernels).
ACCURACY_LEVEL = 4
#: A weight is on a per-tensor grid when rebuilding it from its integers is this close
#: (largest error over largest magnitude); the shipped weights are within 1e-6.
GRID_TOLERANCE = 1e-5
#: The token embedding (the folded decoder keeps one copy, transposed, shared by the lookup
#: and the output projection: :func:`~captioner.asr.moonshine.prepare._share_embedding`).
EMBEDDING = "model.decoder.embed_tokens.weight_transposed"


def on_grid(weight: np.ndarray) -> tuple[np.ndarray, float, int] | None:
    """The integers of a ``[K, N] float32`` weight on one grid ``W = m * s``.

    Returns:
        ``(q, s, zero_point)``: ``q [N, K] uint8`` (transposed: one row per output) with
        ``W.T == (q - zero_point) * s`` within :data:`GRID_TOLERANCE`; None when the weight
        is not on one grid of at most 256 steps that a uint8 zero point can place.
    """
    w = np.asarray(weight, np.float32)
    values = np.unique(w)
    steps = np.diff(values)
    steps = steps[steps > 0]
    top = float(np.abs(w).max()) if w.size else 0.0
    if not steps.size or top == 0.0:
        return None
    m = np.round(w / float(steps.min()))
    s = float(np.sum(w * m, dtype=np.float64) / np.sum(m * m, dtype=np.float64))  # least squares
    m = np.round(w / s)
    if float(np.abs(m * s - w).max()) > GRID_TOLERANCE * top:
        return None
    lo, hi = int(m.min()), int(m.max())
    zero = min(255, max(0, -lo))
    if lo + zero < 0 or hi + zero > 255:
        return None
    return (m + zero).astype(np.uint8).T.copy(), s, zero


def quantize_decoder(model) -> bool:
    """Rewrite a folded merged decoder (``onnx.ModelProto``, in place) to the 8-bit form of the
    module docstring: each MatMul on a 2-D float initializer of the outer graph becomes
    ``MatMulNBits``, the embedding lookup gathers its integer rows. Returns False, the model
    unchanged, when a weight is not on a grid or the graph has not that shape."""
    import onnx
    from onnx import TensorProto, helper
    from onnx import numpy_helper as nh

    graph = model.graph
    outer = {i.name: i for i in graph.initializer}
    graphs = [a.g for n in graph.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH] + [graph]
    users: dict[str, list] = {}
    for g in graphs:
        for node in g.node:
            if node.op_type == "MatMul" and node.input[1] in outer and len(outer[node.input[1]].dims) == 2:
                users.setdefault(node.input[1], []).append((g, node))
    if EMBEDDING not in users or outer[EMBEDDING].dims[0] % BLOCK:  # the lookup's rows: whole blocks
        return False
    for g in graphs:  # a weight read by anything but a MatMul (or the lookup) would lose its input
        for node in g.node:
            for i, name in enumerate(node.input):
                if name in users and not ((node.op_type == "MatMul" and i == 1)
                                          or (node.op_type == "Gather" and name == EMBEDDING and i == 0)):
                    return False
    grids = {name: on_grid(nh.to_array(outer[name])) for name in users}
    if any(v is None for v in grids.values()):
        return False
    lookups = [(g, n, next((t for t in g.node if t.op_type == "Transpose" and t.input[0] == n.output[0]), None))
               for g in graphs for n in g.node if n.op_type == "Gather" and n.input[0] == EMBEDDING]
    if any(t is None for _, _, t in lookups):
        return False
    for name, (q, s, zero) in grids.items():  # type: ignore[misc]
        n_out, k = q.shape
        pad = (-k) % BLOCK
        if pad:
            q = np.concatenate([q, np.full((n_out, pad), zero, np.uint8)], 1)
        blocks = (k + pad) // BLOCK
        graph.initializer.extend([nh.from_array(q.reshape(n_out, blocks, BLOCK), name + "_q8"),
                                  nh.from_array(np.full(n_out * blocks, s, np.float32), name + "_q8_scales"),
                                  nh.from_array(np.full(n_out * blocks, zero, np.uint8), name + "_q8_zero")])
        for j, (g, node) in enumerate(users[name]):
            at = list(g.node).index(node)
            g.node.remove(node)
            g.node.insert(at, helper.make_node(
                "MatMulNBits", [node.input[0], name + "_q8", name + "_q8_scales", name + "_q8_zero"],
                list(node.output), name=f"{name}_q8_matmul_{j}", domain="com.microsoft",
                K=k, N=n_out, bits=8, block_size=BLOCK, accuracy_level=ACCURACY_LEVEL))
        graph.initializer.remove(outer[name])
    _, s, zero = grids[EMBEDDING]  # type: ignore[misc]
    k = outer[EMBEDDING].dims[0]
    graph.initializer.extend([nh.from_array(np.array([0, 0, k], np.int64), EMBEDDING + "_row"),
                              nh.from_array(np.array(zero, np.float32), EMBEDDING + "_zero_f"),
                              nh.from_array(np.array(s, np.float32), EMBEDDING + "_scale_f")])
    for g, gather, transpose in lookups:  # Gather(columns) + Transpose -> rows of integers, dequantized
        at = list(g.node).index(gather)
        g.node.remove(gather)
        g.node.remove(transpose)
        o = gather.output[0]
        chain = [helper.make_node("Gather", [EMBEDDING + "_q8", gather.input[1]], [o + "_q8"], axis=0),
                 helper.make_node("Reshape", [o + "_q8", EMBEDDING + "_row"], [o + "_q8_row"]),
                 helper.make_node("Cast", [o + "_q8_row"], [o + "_q8_f"], to=TensorProto.FLOAT),
                 helper.make_node("Sub", [o + "_q8_f", EMBEDDING + "_zero_f"], [o + "_q8_c"]),
                 helper.make_node("Mul", [o + "_q8_c", EMBEDDING + "_scale_f"], list(transpose.output))]
        for i, node in enumerate(chain):
            node.name = f"{o}_q8_lookup_{i}"
            g.node.insert(at + i, node)
    if not any(op.domain == "com.microsoft" for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return True


def int8_copy(model):
    """The 8-bit form of a folded merged decoder (``onnx.ModelProto``; ``model`` itself is left
    float), checked by loading it in ONNX Runtime as the app will (prepacked); None when
    :func:`quantize_decoder` does not recognise the graph or ONNX Runtime cannot load the result."""
    import onnx
    import onnxruntime as ort

    from captioner.asr.moonshine.ort_options import session_options

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    if not quantize_decoder(copy):
        return None
    try:
        ort.InferenceSession(copy.SerializeToString(), session_options(prepack=True), providers=["CPUExecutionProvider"])
    except Exception:  # onnxruntime raises its own types
        return None
    return copy


def cpu_tag() -> str:
    """A short hash of what names this CPU (machine, processor, Linux's instruction-set flags):
    a prepared 8-bit copy made on another CPU (a shared home folder, a moved VM) has its
    :func:`fast_int8` checked again."""
    import hashlib
    import platform

    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = next((line for line in f if line.startswith(("flags", "Features"))), "")
    except OSError:
        pass
    return hashlib.sha256(f"{platform.machine()}|{platform.processor()}|{flags}".encode()).hexdigest()[:16]


@functools.cache
def fast_int8() -> bool:
    """Whether this CPU has ONNX Runtime's fast int8 kernels for the 8-bit decoder: a ``[1, 416]
    x [416, 3328]`` product (one decoder feed-forward layer's shape) in ``MatMulNBits`` takes at
    most twice the time of the float ``MatMul``. That screens out the ~20x slower reference
    path; the small float weight stays in cache here, so the float side is flattered (measured
    0.6x; a whole decode ~0.7x). Checked once per process, only when a copy is prepared or was
    prepared on another CPU (~0.1 s, ~1 s with the ``onnx`` import); False when ONNX Runtime
    cannot build the graph."""
    import onnxruntime as ort
    from onnx import TensorProto, helper
    from onnx import numpy_helper as nh

    k, n = 416, 3328
    rng = np.random.default_rng(0)
    q = rng.integers(0, 256, (n, k // BLOCK, BLOCK), dtype=np.uint8)
    x = rng.standard_normal((1, k)).astype(np.float32)
    io = ([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])])
    plain = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "float", *io,
                              [nh.from_array(rng.standard_normal((k, n)).astype(np.float32), "w")])
    packed = helper.make_graph(
        [helper.make_node("MatMulNBits", ["x", "q", "s", "z"], ["y"], domain="com.microsoft", K=k, N=n, bits=8,
                          block_size=BLOCK, accuracy_level=ACCURACY_LEVEL)], "int8", *io,
        [nh.from_array(q, "q"), nh.from_array(np.full(n * (k // BLOCK), 0.01, np.float32), "s"),
         nh.from_array(np.full(n * (k // BLOCK), 128, np.uint8), "z")])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    best = []
    try:
        for graph in (plain, packed):
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                            helper.make_opsetid("com.microsoft", 1)])
            session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
            times = []
            for _ in range(30):
                t0 = time.perf_counter()
                session.run(None, {"x": x})
                times.append(time.perf_counter() - t0)
            best.append(min(times))
    except Exception:  # onnxruntime raises its own types: no such kernel here
        return False
    return best[1] <= 2.0 * best[0]
