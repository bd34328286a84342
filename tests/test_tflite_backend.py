"""TFLite backend on files made by the real TensorFlowASR exporter (tests/fixtures/tflite).

The fixtures are tiny random-weight exports of ``tensorflowasr==3.1.1`` (make_fixtures.sh), so
nothing here is about accuracy; the assertions are the streaming contract of DESIGN section 1 and
the TensorFlowASR inference page (section 9): metadata and refusals, state pairing, streaming ==
one-pass on whole chunks for causal conformers, block-size invariance, state actually used, rows
independent of their neighbours, and ``end()`` never decoding pure overlap. Expected texts are
always computed here from our own one-pass mode or from invariants; parity with TensorFlowASR's
``ASRInference`` lives in bench/tflite_parity.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from captioner.asr.base import BackendError, StepRow
from captioner.asr.tflite.errors import TFLiteModelError, TFLiteRuntimeMissing
from captioner.asr.tflite.meta import read_tflite_info, validate_metadata
from captioner.asr.tflite.signature import input_position, order_tensors, output_position
from captioner.engine.batcher import BatchEngine
from captioner.engine.rounds import feed_many
from captioner.engine.session import StreamingSession
from captioner.events import TextDelta, TurnBoundary

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "tflite")
SR = 16000

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def fixture(name: str) -> str:
    return os.path.join(FIXTURES, name + ".tflite")


def noise(seconds: float, seed: int) -> np.ndarray:
    """Deterministic [n] float32 white noise, std 0.1.

    The random-weight fixtures emit varied characters for noise at this level (louder or
    speech-like input drives them into repeating one letter, which would make the tests weaker).
    """
    rng = np.random.default_rng(seed)
    return (0.1 * rng.standard_normal(int(seconds * SR))).astype(np.float32)


def texts(events, source: str | None = None) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and (source is None or e.source == source))


def stream(backend, signal: np.ndarray, block: int | None = None) -> str:
    """One session: feed ``signal`` in ``block``-sample pieces (all at once if None), then end()."""
    session = StreamingSession(backend)
    events = []
    if block is None:
        events += session.feed(signal)
    else:
        for i in range(0, len(signal), block):
            events += session.feed(signal[i : i + block])
    events += session.end()
    return texts(events)


def collapse(text: str) -> str:
    """Merge runs of one character (CTC merges repeats only within one call)."""
    return "".join(c for i, c in enumerate(text) if i == 0 or c != text[i - 1])


# -- runtimes --------------------------------------------------------------------------------------------
def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


needs_flex = pytest.mark.skipif(not (_has("tensorflow") and _has("tensorflow_text")), reason="needs captioner[tflite-flex]")
needs_litert = pytest.mark.skipif(not _has("ai_edge_litert"), reason="needs captioner[tflite]")


@pytest.fixture(scope="module")
def backends():
    """Load each fixture once per module (TensorFlow import + interpreter creation are the slow part)."""
    from captioner.asr.tflite.backend import load_tflite_backend, load_tflite_onepass

    cache: dict[tuple[str, str], object] = {}

    def get(name: str, kind: str = "stream"):
        key = (name, kind)
        if key not in cache:
            loader = load_tflite_backend if kind == "stream" else load_tflite_onepass
            cache[key] = loader(fixture(name))
        return cache[key]

    yield get
    for obj in cache.values():
        obj.close()


# ======================================================================================================
# metadata and refusals (no interpreter)


def test_metadata_and_geometry_come_from_the_file():
    info = read_tflite_info(fixture("ctc_conformer_b2"))
    assert info.metadata == {
        "signal_chunk_size": 2800,
        "signal_chunk_step": 2560,
        "sample_rate": 16000,
        "blank": 0,
        "beam_width": 0,
        "nchunks": 1,
    }
    g = info.geometry
    assert (g.sample_rate, g.chunk_size, g.chunk_step, g.overlap) == (16000, 2800, 2560, 240)
    assert info.batch_size == 2
    assert info.needs_flex and any(op.startswith("Flex") for op in info.custom_ops)

    n2 = read_tflite_info(fixture("transducer_conformer_nchunks2_b1"))
    # size(n) = size(1) + (n - 1) * step(1), step(n) = n * step(1)  (tensorflowasr get_tflite_metadata)
    assert (n2.nchunks, n2.geometry.chunk_size, n2.geometry.chunk_step) == (2, 2800 + 2560, 2 * 2560)
    assert read_tflite_info(fixture("transducer_conformer_beam2_b1")).beam_width == 2
    rnnt = read_tflite_info(fixture("rnnt_lstm_b1"))
    assert (rnnt.geometry.chunk_size, rnnt.geometry.chunk_step) == (720, 480)  # 3 frames: reduction 3

    builtin = read_tflite_info(fixture("builtin_energy_b2"))
    assert not builtin.needs_flex and builtin.custom_ops == [] and builtin.batch_size == 2


@pytest.mark.parametrize(
    "name, phrases",
    [
        ("bad_no_metadata", ["no TFASR_METADATA", "cannot be run safely"]),
        ("bad_renamed_inputs", ["not named tfasr_input_N", "'inputs"]),
        ("bad_wrong_rate", ["sample_rate=16 Hz", "e.g. 16000"]),
        ("bad_truncated", ["truncated or damaged"]),
    ],
)
def test_bad_fixtures_are_refused_with_a_reexport_message(name, phrases):
    with pytest.raises(TFLiteModelError) as info:
        read_tflite_info(fixture(name))
    message = str(info.value)
    for phrase in phrases:
        assert phrase in message
    assert name in message  # names the file
    if name != "bad_truncated":
        assert "tensorflow_asr tflite" in message


@pytest.mark.parametrize("name", ["bad_no_metadata", "bad_renamed_inputs", "bad_wrong_rate", "bad_truncated"])
def test_loader_refuses_before_creating_an_interpreter(name, monkeypatch):
    import captioner.asr.tflite.backend as tb

    def boom(*a, **k):  # an interpreter must never be created for a refused file
        raise AssertionError("interpreter created for a refused file")

    monkeypatch.setattr(tb, "make_interpreter", boom)
    with pytest.raises(TFLiteModelError):
        tb.load_tflite_backend(fixture(name))


@pytest.mark.parametrize("fraction", [0.999, 0.9, 0.3, 0.01])
def test_any_truncation_is_refused(tmp_path, fraction):
    data = open(fixture("transducer_conformer_b1"), "rb").read()
    cut = tmp_path / "cut.tflite"
    cut.write_bytes(data[: max(8, int(len(data) * fraction))])
    with pytest.raises(TFLiteModelError, match="truncated or damaged"):
        read_tflite_info(cut)


@needs_flex
def test_metadata_is_read_without_litert_and_without_importing_tensorflow(monkeypatch):
    """With only the flex extra, the schema file inside TensorFlow is loaded by path."""
    import captioner.asr.tflite.meta as meta

    monkeypatch.setitem(sys.modules, "ai_edge_litert.schema_py_generated", None)
    schema = meta.load_schema()
    assert schema.__name__ == "_captioner_tflite_schema" and "tensorflow" in schema.__file__
    assert read_tflite_info(fixture("rnnt_lstm_b1")).geometry.chunk_step == 480

    monkeypatch.setattr(meta.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(TFLiteRuntimeMissing, match=r"captioner\[tflite\]"):
        meta.load_schema()


def test_not_a_tflite_file_and_missing_file(tmp_path):
    wav = tmp_path / "speech.wav"
    wav.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt ")
    with pytest.raises(TFLiteModelError, match="not a TFLite flatbuffer"):
        read_tflite_info(wav)
    with pytest.raises(TFLiteModelError, match="not found"):
        read_tflite_info(tmp_path / "missing.tflite")


@pytest.mark.parametrize(
    "change, phrase",
    [
        ({"sample_rate": 441000}, "sample_rate=441000"),
        ({"sample_rate": "16000"}, "integer 'sample_rate'"),
        ({"signal_chunk_step": 3000}, "impossible chunk geometry"),
        ({"blank": -1}, "blank >= 0"),
        ({"signal_chunk_size": None}, "integer 'signal_chunk_size'"),
    ],
)
def test_metadata_validation(change, phrase):
    meta = {"signal_chunk_size": 2800, "signal_chunk_step": 2560, "sample_rate": 16000, "blank": 0}
    meta.update(change)
    with pytest.raises(TFLiteModelError, match=phrase):
        validate_metadata(meta)
    ok, geometry = validate_metadata({"signal_chunk_size": 2800, "signal_chunk_step": 2560, "sample_rate": 16000, "blank": 0})
    assert ok["beam_width"] == 0 and ok["nchunks"] == 1 and geometry.chunk_step == 2560


def test_tensor_positions_are_read_from_names_not_listing_order():
    assert input_position("serving_default_tfasr_input_12:0") == 12
    assert input_position("tfasr_input_0") == 0
    assert input_position("serving_default_inputs_1:0") is None
    assert output_position("Identity") == 0 and output_position("Identity_7") == 7
    assert output_position("StatefulPartitionedCall:3") == 3 and output_position("PartitionedCall:1") == 1
    details = [
        {"name": f"tfasr_input_{p}", "dtype": np.float32, "shape": [1, 2], "shape_signature": [1, 2]} for p in (2, 0, 1)
    ]
    assert [t.position for t in order_tensors(details, "input")] == [0, 1, 2]
    with pytest.raises(TFLiteModelError, match="contiguous"):
        order_tensors(details[:1] + details[2:], "input")


def test_state_pairing_per_architecture():
    """Pairs run from the end; CTC has no next-token output, so its previous-token input is unpaired."""
    ctc = read_tflite_info(fixture("ctc_conformer_b1"))
    assert len(ctc.inputs) == 11 and len(ctc.outputs) == 10
    assert [(p.input.position, p.output.position) for p in ctc.states] == [(i + 1, i) for i in range(2, 10)]

    rnnt_conformer = read_tflite_info(fixture("transducer_conformer_b1"))
    assert [(p.input.position, p.output.position) for p in rnnt_conformer.states] == [(i, i) for i in range(2, 12)]

    beam = read_tflite_info(fixture("transducer_conformer_beam2_b1"))
    assert len(beam.states) == 13  # + beam scores, beam last tokens, beam states
    scores = [t for t in beam.inputs[2:] if t.dtype == np.float32 and t.shape == (1, 2)]
    assert len(scores) == 1

    lstm = read_tflite_info(fixture("rnnt_lstm_b1"))
    # the runtime and the flatbuffer list this one's tensors out of order (serving_default_*:0 names)
    assert [t.position for t in lstm.inputs] == [0, 1, 2, 3, 4]
    assert lstm.inputs[3].shape == (1, 2, 2, 16)  # [B, layers, (h, c), units] LSTM encoder state
    assert [(p.input.position, p.output.position) for p in lstm.states] == [(2, 2), (3, 3), (4, 4)]
    for info in (ctc, rnnt_conformer, beam, lstm):
        for pair in info.states:
            assert pair.input.dtype == pair.output.dtype


# ======================================================================================================
# runtime choice and missing-runtime messages


@needs_litert
def test_builtin_only_file_runs_on_litert(backends):
    backend = backends("builtin_energy_b2")
    assert backend.program.runtime == "litert"
    assert "litert" in backend.describe() and "B=2" in backend.describe()


@needs_flex
def test_flex_file_runs_on_tensorflow(backends):
    backend = backends("ctc_conformer_b1")
    assert backend.program.runtime == "tensorflow"
    assert backend.geometry.chunk_size == 2800 and backend.batch_size == 1 and backend.flush_chunks == 0


def test_missing_runtime_names_the_extra(monkeypatch):
    import captioner.asr.tflite.runtime as rt

    monkeypatch.setattr(rt, "_tensorflow_version", lambda: None)
    with pytest.raises(TFLiteRuntimeMissing, match=r"captioner\[tflite-flex\]"):
        rt.make_interpreter(read_tflite_info(fixture("ctc_conformer_b1")))

    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)  # import fails
    with pytest.raises(TFLiteRuntimeMissing, match=r"captioner\[tflite\]"):
        rt.make_interpreter(read_tflite_info(fixture("builtin_energy_b2")))

    monkeypatch.setattr(rt, "_tensorflow_version", lambda: (2, 20))
    with pytest.raises(TFLiteRuntimeMissing, match="2.20 has no Flex delegate"):
        rt.make_interpreter(read_tflite_info(fixture("ctc_conformer_b1")))


def test_litert_cannot_run_flex_and_says_so():
    import captioner.asr.tflite.runtime as rt

    with pytest.raises(TFLiteModelError, match="Flex"):
        rt.make_interpreter(read_tflite_info(fixture("ctc_conformer_b1")), runtime="litert")


@needs_litert
def test_real_litert_failure_on_a_flex_file_becomes_a_message():
    """LiteRT loads a Flex export and fails at allocate_tensors(): no traceback, the extra is named.

    Run in a fresh process: once TensorFlow is loaded in a process, LiteRT finds its Flex delegate.
    """
    code = (
        "import captioner.asr.tflite.runtime as rt\n"
        "from captioner.asr.tflite.errors import TFLiteRuntimeMissing\n"
        "from captioner.asr.tflite.meta import read_tflite_info\n"
        "rt.choose_runtime = lambda info, prefer='auto': rt.LITERT\n"
        f"info = read_tflite_info({fixture('ctc_conformer_b1')!r})\n"
        "try:\n"
        "    rt.make_interpreter(info)\n"
        "except TFLiteRuntimeMissing as exc:\n"
        "    print('MESSAGE', exc)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=root)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "MESSAGE" in out.stdout and "Traceback" not in out.stdout
    assert "Flex delegate" in out.stdout and "captioner[tflite-flex]" in out.stdout


# ======================================================================================================
# streaming contract


def aligned(geometry, chunks: int, seed: int) -> np.ndarray:
    """Audio of exactly ``chunks`` whole chunks: size + (chunks - 1) * step samples."""
    n = geometry.chunk_size + (chunks - 1) * geometry.chunk_step
    return noise(n / SR, seed)[:n]


@needs_flex
@pytest.mark.parametrize("name", ["transducer_conformer_b1", "rnnt_lstm_b1"])
def test_streaming_equals_one_pass_on_whole_chunks(backends, name):
    """Causal models, greedy, B=1: chunked decoding reproduces one pass exactly (inference page 6)."""
    backend, onepass = backends(name), backends(name, "onepass")
    for seed, chunks in ((0, 12), (1, 5)):
        audio = aligned(backend.geometry, chunks, seed)
        whole = onepass.transcribe([audio])[0]
        assert len(whole) >= 5, "the one-pass text is too short for the comparison to mean anything"
        assert stream(backend, audio, block=1000) == whole


@needs_flex
def test_ctc_streaming_equals_one_pass_up_to_repeats_merged_per_call(backends):
    """A CTC export merges repeated labels inside one call only, so a letter can double at a chunk edge."""
    backend, onepass = backends("ctc_conformer_b1"), backends("ctc_conformer_b1", "onepass")
    audio = aligned(backend.geometry, 12, 2)
    whole = onepass.transcribe([audio])[0]
    streamed = stream(backend, audio, block=1000)
    assert len(whole) >= 5
    assert collapse(streamed) == collapse(whole)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("transducer_conformer_b1", marks=needs_flex),
        pytest.param("ctc_conformer_b1", marks=needs_flex),
        pytest.param("transducer_conformer_beam2_b1", marks=needs_flex),
        pytest.param("transducer_conformer_nchunks2_b1", marks=needs_flex),
        pytest.param("rnnt_lstm_b1", marks=needs_flex),
        pytest.param("builtin_energy_b2", marks=needs_litert),
    ],
)
def test_block_size_does_not_change_the_text(backends, name):
    backend = backends(name)
    audio = noise(2.3, 3)  # not a whole number of chunks: end() pads one chunk
    reference = stream(backend, audio, block=None)
    assert len(reference) >= 3
    for block in (160, 1000, 7919):
        assert stream(backend, audio, block=block) == reference, f"block {block}"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("transducer_conformer_b1", marks=needs_flex),
        pytest.param("ctc_conformer_b1", marks=needs_flex),
        pytest.param("transducer_conformer_beam2_b1", marks=needs_flex),
        pytest.param("transducer_conformer_nchunks2_b1", marks=needs_flex),
        pytest.param("rnnt_lstm_b1", marks=needs_flex),
        pytest.param("builtin_energy_b2", marks=needs_litert),
    ],
)
def test_state_is_used(backends, name):
    """Decoding non-first chunks from a fresh state must differ from decoding them in sequence."""
    backend = backends(name)
    g = backend.geometry
    audio = aligned(g, 8, 4)
    chunks = [audio[i * g.chunk_step : i * g.chunk_step + g.chunk_size] for i in range(8)]
    state, carried, fresh = None, [], []
    for i, chunk in enumerate(chunks):
        (res,) = backend.step([StepRow(chunk, state, 0.0, 0.0)])
        state = res.state
        carried.append(texts(res.events))
        if i:
            (alone,) = backend.step([StepRow(chunk, None, 0.0, 0.0)])
            fresh.append(texts(alone.events))
    assert fresh != carried[1:], "every chunk decodes the same without its predecessor's state: streaming is fake"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("transducer_conformer_b2", marks=needs_flex),
        pytest.param("ctc_conformer_b2", marks=needs_flex),
        pytest.param("builtin_energy_b2", marks=needs_litert),
    ],
)
def test_rows_decode_the_same_alone_or_together(backends, name):
    backend = backends(name)
    a, b = noise(2.0, 5), noise(1.3, 6)  # different lengths: b ends first
    alone = [stream(backend, a, 1000), stream(backend, b, 1000)]
    engine = BatchEngine.shared(backend)
    calls_before = engine.calls
    sa, sb = StreamingSession(engine, "a"), StreamingSession(engine, "b")
    events = feed_many([(sa, a), (sb, b)], end=True)
    together = [texts(events, "a"), texts(events, "b")]
    assert together == alone
    assert len(alone[0]) >= 3 and alone[0] != alone[1]
    chunks_a = 1 + -(-(len(a) - backend.geometry.chunk_size) // backend.geometry.chunk_step)
    assert engine.calls - calls_before == chunks_a, "two sessions' chunks did not share model calls"


@needs_flex
def test_end_does_not_redecode_the_overlap(backends):
    backend = backends("transducer_conformer_b1")
    g = backend.geometry
    audio = aligned(g, 6, 7)
    steps: list[list[bool]] = []
    real_step = backend.step

    def counting(rows):
        steps.append([r.audio is not None for r in rows])
        return real_step(rows)

    backend.step = counting  # instance attribute: only this test's calls are counted
    engine = BatchEngine(backend)
    try:
        session = StreamingSession(engine)
        fed = session.feed(audio)
        assert len(steps) == 6
        assert session.pending_samples == 0 and len(session.buffer) == g.overlap
        tail = session.end()
        assert steps[6:] == [[False]], "end() decoded the pure overlap again"
        assert texts(tail) == ""
        assert [type(e) for e in tail] == ([TurnBoundary] if texts(fed) else [])

        # one new sample beyond the overlap is decoded in exactly one padded chunk
        steps.clear()
        session.feed(np.concatenate([audio, audio[:1]]))
        session.end()
        assert [s[0] for s in steps] == [True] * 7
    finally:
        engine.close()
        del backend.step


@needs_flex
def test_text_deltas_carry_stream_times(backends):
    backend = backends("transducer_conformer_b1")
    g = backend.geometry
    session = StreamingSession(backend)
    events = session.feed(aligned(g, 4, 8)) + session.end()
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert deltas and all(d.final for d in deltas)
    starts = [d.start for d in deltas]
    assert starts == sorted(starts) and all(d.end > d.start for d in deltas)
    assert deltas[-1].end <= (g.chunk_size + 3 * g.chunk_step) / SR + 1e-9


# ======================================================================================================
# one-pass mode


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("transducer_conformer_b2", marks=needs_flex),
        pytest.param("builtin_energy_b2", marks=needs_litert),
    ],
)
def test_one_pass_rows_are_padded_with_real_lengths(backends, name):
    onepass = backends(name, "onepass")
    signals = [noise(1.7, 9), noise(0.9, 10), noise(1.2, 11)]
    together = onepass.transcribe(signals)  # two calls: [s0, s1 padded], [s2, silence]
    alone = [onepass.transcribe([s])[0] for s in signals]
    assert together == alone
    assert len(set(together)) >= 2
    assert onepass.transcribe([np.zeros(0, np.float32)]) == [""]


@needs_flex
def test_ctc_one_pass_rows_of_equal_length_are_independent(backends):
    """The CTC export is sensitive to the padded width (its text for a row padded with zeros past
    its real length can differ, as with TensorFlowASR's own engine), so only equal widths are pinned."""
    onepass = backends("ctc_conformer_b2", "onepass")
    signals = [noise(1.3, 15), noise(1.3, 16)]
    together = onepass.transcribe(signals)
    assert together == [onepass.transcribe([s])[0] for s in signals]
    assert together[0] != together[1] and len(together[0]) >= 3


@needs_flex
def test_one_pass_and_streaming_use_separate_interpreters(backends):
    stream_backend, onepass = backends("transducer_conformer_b1"), backends("transducer_conformer_b1", "onepass")
    assert stream_backend.program.interpreter is not onepass.program.interpreter
    audio = aligned(stream_backend.geometry, 3, 12)
    before = stream(stream_backend, audio)
    onepass.transcribe([noise(3.3, 13)])  # a whole-signal resize must not disturb streaming
    assert stream(stream_backend, audio) == before


# ======================================================================================================
# errors


@needs_flex
def test_step_errors_reach_the_caller(backends):
    backend = backends("transducer_conformer_b1")
    with pytest.raises(BackendError, match="2800 samples"):
        backend.step([StepRow(np.zeros(100, np.float32), None, 0.0, 0.0)])
    with pytest.raises(BackendError, match="B=1"):
        backend.step([StepRow(np.zeros(2800, np.float32), None, 0.0, 0.0)] * 2)
    # finish-only rows decode nothing and keep the state
    (res,) = backend.step([StepRow(None, "keep", 1.0, 1.0, last=True)])
    assert res.state == "keep" and res.events == []


@needs_flex
def test_copied_fixture_outside_the_repo_loads(tmp_path, backends):
    """Paths are the user's: a copy with another name works the same."""
    from captioner.asr.tflite.backend import load_tflite_backend

    copy = tmp_path / "my model.tflite"
    shutil.copy(fixture("rnnt_lstm_b1"), copy)
    backend = load_tflite_backend(copy)
    audio = noise(1.0, 14)
    assert stream(backend, audio) == stream(backends("rnnt_lstm_b1"), audio)
    backend.close()
    with pytest.raises(BackendError, match="closed"):
        backend.step([StepRow(np.zeros(720, np.float32), None, 0.0, 0.0)])
