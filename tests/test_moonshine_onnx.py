"""The default model on captioner's own ONNX Runtime loop: preparation cache, tokens, allocations.

Uses the files shipped in the ``moonshine-cpp`` wheel (nothing is downloaded) and espeak-ng
speech. The reference for "token-identical" is the shipped ``.ort`` decoder run directly
with onnxruntime in the plainest greedy loop (numpy inputs, no I/O binding).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from captioner.asr.moonshine import prepare as prep
from captioner.asr.moonshine.files import default_model_dir
from captioner.asr.moonshine.model import MoonshineModel
from captioner.asr.moonshine.ort_options import session_options
from captioner.asr.moonshine.tokenizer import Tokenizer
from captioner.audio.fileio import load_audio
from tests.speech import espeak, have_espeak

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed (scripts/test.sh installs it)"),
]

SENTENCE = "The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of times."


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="module")
def model(cache_root):
    return MoonshineModel(default_model_dir(), cache_root=cache_root)


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return load_audio(str(espeak(SENTENCE, tmp_path_factory.mktemp("speech") / "fox.wav")), 16000)


def shipped_greedy(audio: np.ndarray, max_tokens: int, min_tokens: int = 0) -> list[int]:
    """Greedy tokens of the shipped ``.ort`` graphs (plain session.run, numpy in and out); the end
    token is not chosen before ``min_tokens`` tokens."""
    import onnxruntime as ort

    d = default_model_dir()
    enc = ort.InferenceSession(str(d / "encoder_model.ort"), session_options(), providers=["CPUExecutionProvider"])
    dec = ort.InferenceSession(str(d / "decoder_model_merged.ort"), session_options(),
                               providers=["CPUExecutionProvider"])
    hidden = enc.run(None, {"input_values": audio[None].astype(np.float32)})[0]
    past = {i.name: np.zeros((1, 8, 0, 52), np.float32) for i in dec.get_inputs() if i.name.startswith("past")}
    names = [o.name for o in dec.get_outputs()]
    tokens, last = [], 1
    for step in range(max_tokens):
        out = dec.run(None, {"input_ids": np.array([[last]], np.int64), "encoder_hidden_states": hidden, **past,
                             "use_cache_branch": np.array([step > 0])})
        logits = out[0][0, -1].copy()
        if step < min_tokens:
            logits[2] = -np.inf
        last = int(logits.argmax())
        if last == 2:
            break
        tokens.append(last)
        for name, value in zip(names[1:], out[1:]):
            if step == 0 or ".decoder." in name:
                past[name.replace("present", "past_key_values")] = value
    return tokens


def test_tokens_identical_to_the_shipped_graph(model, clip):
    ours = model.generate(clip)
    assert ours == shipped_greedy(clip, model.max_tokens(len(clip)))
    assert len(ours) >= 20
    text = model.tokenizer.decode(ours)
    assert "lazy dog" in text.lower() and "worst" in text.lower(), text


def test_tokenizer_reads_the_shipped_file_and_rejects_a_truncated_one(tmp_path):
    tok = Tokenizer(default_model_dir() / "tokenizer.bin")
    assert len(tok) == 32000
    assert tok.decode([1, 450, 4996, 17354, 29889, 2]) == "The quick brown."  # start/end skipped
    assert tok.decode([3 + 0xC3, 3 + 0xA9]) == "é"  # byte-fallback pieces join into UTF-8
    assert tok.decode([40000]) == ""  # ids past the vocabulary (logits are 32768 wide) are skipped
    bad = tmp_path / "tokenizer.bin"
    bad.write_bytes((default_model_dir() / "tokenizer.bin").read_bytes()[:-3])
    with pytest.raises(ValueError):
        Tokenizer(bad)


def test_token_budget_stops_a_runaway_decode(model, clip):
    assert model.generate(clip, max_tokens=5) == model.generate(clip)[:5]
    assert model.max_tokens(16000) == 7  # 6.5 tokens per second of audio, rounded up
    assert model.generate(np.zeros(800, np.float32)) == []  # under 0.1 s: nothing to read


def test_a_decoder_step_allocates_no_large_buffer(model, clip):
    """The shipped graph allocated ~80 MB per step (dequantized weights); with the caches passed
    on as ORT values, a whole decode of ~27 steps makes no numpy allocation over 1 MB, and 1,000
    steps leave resident memory where it was."""
    hidden = model.encode(clip)
    model.decode(hidden, 40)  # warm the arena
    tracemalloc.start()
    try:
        tokens = model.decode(hidden, 40)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(tokens) >= 20
    assert peak < 1 << 20, peak

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    steps, before = 0, rss_mb()
    while steps < 1000:
        steps += len(model.decode(hidden, 40)) + 1
    assert rss_mb() - before < 30


def test_cache_is_reused_and_a_truncated_cache_is_rebuilt(cache_root, model, clip, tmp_path):
    assert not prep.prepare(default_model_dir(), cache_root).built  # the model fixture built it
    root = tmp_path / "cache"  # its own folder: the fixture's model maps the shared one's files
    (root / "0123-older-recipe").mkdir(parents=True)
    (root / "0123-older-recipe" / "manifest.json").write_text("{}")
    first = prep.prepare(default_model_dir(), root)
    assert sorted(p.name for p in root.iterdir()) == [first.cache_dir.name]  # the stale copy is gone
    again = prep.prepare(default_model_dir(), root)
    assert first.built and not again.built and again.cache_dir == first.cache_dir
    data = again.cache_dir / "decoder_model_merged.onnx.data"
    size = data.stat().st_size
    with open(data, "r+b") as f:
        f.truncate(data.stat().st_size // 2)
    said = []
    rebuilt = prep.prepare(default_model_dir(), root, progress=lambda msg, pct: said.append(msg))
    assert rebuilt.built and rebuilt.cache_dir == again.cache_dir
    assert "corrupt" in said[0] and "first use" not in said[0]  # the user is told why it is built again
    assert data.stat().st_size == size
    fresh = MoonshineModel(default_model_dir(), prepared=rebuilt)
    assert fresh.generate(clip) == model.generate(clip)


def test_a_cache_folder_that_cannot_be_written_still_captions(tmp_path, monkeypatch, clip, model):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setattr(prep, "_warned_memory", False)
    said = []
    m = MoonshineModel(default_model_dir(), cache_root=blocker / "cache", progress=lambda msg, pct: said.append(msg))
    assert m.prepared.cache_dir is None and isinstance(m.prepared.decoder, bytes)
    assert m.generate(clip) == model.generate(clip)
    assert sum("in memory" in s for s in said) == 1
    said.clear()
    prep.prepare(default_model_dir(), blocker / "cache", progress=lambda msg, pct: said.append(msg))
    assert not any("in memory" in s for s in said)  # said once per process


def test_scored_reading_is_the_greedy_reading_with_its_mean_token_log_probability(model, clip):
    from captioner.asr.moonshine.model import log_softmax_at

    text, score = model.transcribe_scored(clip)
    assert text == model.transcribe(clip)
    logprobs: list[float] = []
    tokens = model.generate(clip, logprobs=logprobs)
    assert len(logprobs) in (len(tokens), len(tokens) + 1)  # + the end token when it was reached
    assert score == pytest.approx(float(np.mean(logprobs))) and -5.0 < score < 0.0
    x = np.array([1.0, 3.0, -2.0], np.float32)
    assert log_softmax_at(x, 1) == pytest.approx(float(np.log(np.exp(3.0) / np.exp(x.astype(np.float64)).sum())))
