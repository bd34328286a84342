"""The default model's decoder in its shipped 8-bit integers (issue 40: ``moonshine_int8``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jiwer
import numpy as np
import pytest

from captioner.asr.moonshine import int8 as q8
from captioner.asr.moonshine import prepare as prep
from captioner.asr.moonshine.files import default_model_dir
from captioner.asr.moonshine.model import MoonshineModel
from tests.speech import have_espeak


def test_on_grid_gives_back_the_integers_of_a_weight_on_one_grid():
    rng = np.random.default_rng(1)
    m = rng.integers(-120, 100, (48, 40))  # whole steps of one scale, offset like the shipped weights
    w = (m * np.float32(0.0123)).astype(np.float32)
    q, s, zero = q8.on_grid(w)
    assert q.shape == (40, 48) and q.dtype == np.uint8  # one row per output
    assert zero == 120 and s == pytest.approx(0.0123, rel=1e-6)
    assert np.array_equal(q.T.astype(int) - zero, m)
    np.testing.assert_allclose((q.T.astype(np.float32) - zero) * np.float32(s), w, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("weight", [
    np.random.default_rng(2).standard_normal((32, 16)).astype(np.float32),  # float weights: no grid
    (np.arange(-200, 200).reshape(20, 20) * 0.01).astype(np.float32),  # 400 steps: more than 8 bits
    np.zeros((8, 8), np.float32),
])
def test_on_grid_refuses_a_weight_8_bits_cannot_hold(weight):
    assert q8.on_grid(weight) is None


def test_a_decoder_whose_weights_are_not_on_a_grid_is_left_as_it_is():
    from onnx import TensorProto, helper
    from onnx import numpy_helper as nh

    w = np.random.default_rng(3).standard_normal((16, 32)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", q8.EMBEDDING], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])],
                              [nh.from_array(w, q8.EMBEDDING)])
    model = helper.make_model(graph)
    before = model.SerializeToString()
    assert not q8.quantize_decoder(model)
    assert model.SerializeToString() == before


def test_fast_int8_is_a_cached_yes_or_no():
    assert q8.fast_int8() in (True, False)
    assert q8.fast_int8() is q8.fast_int8()


VOICES = {"en-us": "The budget review moves to Thursday because the auditors need two more days.",
          "en-gb+m3": "Please send the slides to everyone before the call starts tomorrow morning.",
          "en-us+f2": "We measured the latency again and it dropped to half of what it was last week.",
          "en-sc": "The new office opens in March, next to the station, with room for forty people."}


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    """The model prepared both ways, each in its own cache folder: ``{True: 8-bit, False: float}``."""
    if not q8.fast_int8():
        pytest.skip("this CPU has no fast int8 kernels: only the float decoder is built")
    out = {True: MoonshineModel(default_model_dir(), cache_root=tmp_path_factory.mktemp("int8-cache"))}
    mp = pytest.MonkeyPatch()
    mp.setattr(q8, "fast_int8", lambda: False)
    try:
        out[False] = MoonshineModel(default_model_dir(), cache_root=tmp_path_factory.mktemp("float-cache"))
    finally:
        mp.undo()
    return out


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed (scripts/test.sh installs it)")
def test_the_8_bit_decoder_holds_the_shipped_integers_in_a_third_of_the_space(kinds):
    import onnx

    int8, flt = kinds[True].prepared, kinds[False].prepared
    assert int8.int8_decoder and not flt.int8_decoder
    for p in (int8, flt):
        manifest = json.loads((p.cache_dir / "manifest.json").read_text())
        assert manifest["recipe"] == prep.recipe(p.int8_decoder)
    size = {k: (p.cache_dir / "decoder_model_merged.onnx.data").stat().st_size for k, p in ((1, int8), (0, flt))}
    assert size[0] > 150e6 and size[1] < 60e6, size
    graph = onnx.load(int8.decoder, load_external_data=False).graph
    branches = [a.g for n in graph.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    ops = [n.op_type for g in branches for n in g.node]
    assert ops.count("MatMulNBits") == 81 + 65  # every weight of both branches (first step, cached steps)
    float_matrices = [i.name for i in graph.initializer
                      if i.data_type == onnx.TensorProto.FLOAT and len(i.dims) == 2 and np.prod(i.dims) > 1e5]
    assert not float_matrices


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed (scripts/test.sh installs it)")
def test_the_8_bit_decoder_reads_what_the_float_one_reads(kinds, tmp_path):
    from captioner.audio.fileio import load_audio

    for voice, sentence in VOICES.items():
        wav = tmp_path / f"{voice}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-w", str(wav), sentence], check=True)
        clip = load_audio(str(wav), 16000)
        (text8, score8), (textf, scoref) = (kinds[k].transcribe_scored(clip) for k in (True, False))
        # the same reading, up to a word or two: int8 kernels differ by CPU, and where the float
        # decoder is unsure of a word (en-gb+m3's "call": "chloral"), the 8-bit one may pick another
        # unsure reading ("chorus"); exact equality held on one CPU and failed on the next
        words8, wordsf = text8.lower().replace("-", "").split(), textf.lower().replace("-", "").split()
        assert jiwer.wer(" ".join(wordsf), " ".join(words8)) * len(wordsf) <= 2, (voice, text8, textf)
        if text8 == textf:  # the same tokens: the same score (another reading scores its own tokens)
            assert abs(score8 - scoref) < 0.02, (voice, score8, scoref)
        words = set(text8.lower().replace(",", "").replace(".", "").split())
        assert len(words & set(sentence.lower().replace(",", "").replace(".", "").split())) >= 8, text8


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_the_8_bit_decoders_weights_file_is_not_kept_resident_once_packed(kinds):
    """The session runs on its packed copy: of the 54 MB file, 27 MB stayed resident after the
    packing read it; now only what decoding reads again: the token lookup's rows (the table is
    13.6 MB; each row read maps the 64 kB around it, ~4-7 MB after a few sentences)."""
    from captioner import heap
    from captioner.asr.moonshine.prepare import weights_file

    data = weights_file(kinds[True].prepared.decoder)
    with open("/proc/self/maps", encoding="utf-8") as maps:  # the name the release looks for is the file mapped
        assert os.path.realpath(data) in maps.read()
    resident = sum(rss for lo, hi, rss in heap._clean_mappings(os.path.realpath(data)))
    assert resident < 20e6, resident / 1e6  # (the readings before it are the other tests')


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed (scripts/test.sh installs it)")
def test_a_copy_of_either_kind_in_the_cache_is_used_without_checking_the_cpu_again(kinds, monkeypatch):
    def no_check():
        raise AssertionError("the CPU is checked only when a copy is built or was made on another CPU")

    monkeypatch.setattr(q8, "fast_int8", no_check)
    for int8, model in kinds.items():
        again = prep.prepare(default_model_dir(), model.prepared.cache_dir.parent)
        assert not again.built and again.int8_decoder is int8 and again.cache_dir == model.prepared.cache_dir


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed (scripts/test.sh installs it)")
def test_an_8_bit_copy_made_on_another_cpu_is_checked_and_replaced_where_int8_is_slow(kinds, monkeypatch, tmp_path):
    """A shared home folder or a moved VM: the copy's CPU tag differs; where this CPU has no fast
    int8 kernel the float decoder is built instead (the 8-bit one would read ~20x slower)."""
    import shutil

    root = tmp_path / "cache"
    shutil.copytree(kinds[True].prepared.cache_dir, root / kinds[True].prepared.cache_dir.name)
    checks = []
    monkeypatch.setattr(q8, "cpu_tag", lambda: "another-cpu")
    monkeypatch.setattr(q8, "fast_int8", lambda: checks.append(1) or True)
    same = prep.prepare(default_model_dir(), root)
    assert checks and not same.built and same.int8_decoder  # fast here too: kept
    monkeypatch.setattr(q8, "fast_int8", lambda: False)
    slow = prep.prepare(default_model_dir(), root)
    assert slow.built and not slow.int8_decoder
    assert [p.name for p in root.iterdir()] == [slow.cache_dir.name]  # the 8-bit copy is gone


def test_a_graph_the_rewrite_would_break_is_not_rewritten():
    """A weight read by anything but a MatMul (here an Add) would lose its input: no rewrite."""
    from onnx import TensorProto, helper
    from onnx import numpy_helper as nh

    w = (np.random.default_rng(4).integers(-50, 50, (16, 32)) * 0.01).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", q8.EMBEDDING], ["y"]),
                               helper.make_node("Add", [q8.EMBEDDING, q8.EMBEDDING], ["z"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [16, 32])],
                              [nh.from_array(w, q8.EMBEDDING)])
    model = helper.make_model(graph)
    assert not q8.quantize_decoder(model) and q8.int8_copy(model) is None
