"""Hotwords (issue 28): spelling with the model's tokenizer, biasing the greedy decoder,
the user's list on the CLI.

The decoder-level tests drive :class:`captioner.asr.moonshine.hotwords.Biasing` with a scripted
"model" (logits that depend on the tokens so far) over the real ``tokenizer.bin``, so each
case is exact and fast; the ``slow`` ones run the shipped Moonshine model on espeak-ng speech.
"""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from captioner.asr.hotword_list import (MAX_BOOST, MAX_HOTWORDS, HotwordError, check_hotwords, parse_hotwords,
                                        read_hotwords_file, spelling_problem)
from captioner.asr.moonshine.hotwords import REENTRY_WORDS, HotwordTree
from captioner.asr.moonshine.files import default_model_dir
from captioner.asr.moonshine.tokenizer import END, SPACE_MARK, Tokenizer
from captioner.cli import main
from tests.speech import have_espeak

V = 32768


@pytest.fixture(scope="module")
def tok():
    return Tokenizer(default_model_dir() / "tokenizer.bin")


def pieces(tok, ids):
    return [tok.pieces[i].decode("utf-8", "replace") for i in ids]


# -- spelling ---------------------------------------------------------------------------------
def test_encode_is_sentencepiece_bpe_of_the_llama_vocabulary(tok):
    # Llama's tokenizer (the same piece list) gives these segmentations
    assert pieces(tok, tok.encode(SPACE_MARK + "Kubernetes")) == ["▁K", "ubernetes"]
    assert pieces(tok, tok.encode(SPACE_MARK + "the quick brown fox")) == ["▁the", "▁quick", "▁brown", "▁fo", "x"]
    assert pieces(tok, tok.encode("Please")) == ["Please"]
    for text in ("Siobhan Okonkwo", "Zoë Müller", "PostgreSQL 16", "naïve café", "O'Brien-Smith"):
        assert tok.decode(tok.encode(SPACE_MARK + text)) == text
    emoji = tok.encode("\U0001f984")  # no piece: UTF-8 byte fallback, 4 bytes
    assert emoji == [3 + b for b in "\U0001f984".encode()]


def test_a_character_without_a_piece_cannot_be_spelled(tok):
    assert spelling_problem("Siobhan", tok) is None
    problem = spelling_problem("Uni\U0001f984corn", tok)
    assert "cannot spell" in problem and "U+1F984" in problem


# -- the list -----------------------------------------------------------------------------------
def test_hotwords_file_comments_blank_lines_and_bom(tmp_path):
    f = tmp_path / "words.txt"
    f.write_text("\ufeff# team\nSiobhan\n\n  Okonkwo   # lead\nC# \nNakamura  contract\n", encoding="utf-8")
    assert read_hotwords_file(f) == ["Siobhan", "Okonkwo", "C#", "Nakamura  contract"]
    assert check_hotwords(read_hotwords_file(f) + ["Siobhan"]) == ("Siobhan", "Okonkwo", "C#", "Nakamura contract")
    assert parse_hotwords("a\r\n#b\r\nc") == ["a", "c"]


@pytest.mark.parametrize("content, needle", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8 text"),
    (b"Siobhan\x00Okonkwo", "not a text file"),
])
def test_a_file_that_is_not_text_is_refused(tmp_path, content, needle):
    f = tmp_path / "words.txt"
    f.write_bytes(content)
    with pytest.raises(HotwordError, match=needle):
        read_hotwords_file(f)


def test_list_limits():
    with pytest.raises(HotwordError, match="empty"):
        check_hotwords(["Siobhan", "  "])
    with pytest.raises(HotwordError, match=f"more than {MAX_HOTWORDS}"):
        check_hotwords([f"Word{i}" for i in range(MAX_HOTWORDS + 1)])
    assert len(check_hotwords([f"Word{i}" for i in range(MAX_HOTWORDS)])) == MAX_HOTWORDS


# -- biasing, on a scripted model -------------------------------------------------------------
class Script:
    """A toy decoder: after a token prefix, logits favour the next token of ``text`` by
    ``margin``; ``alt`` maps a prefix (tuple of ids) to {token: logit} overrides."""

    def __init__(self, tok, text: str, alt: dict | None = None, margin: float = 10.0):
        self.ids = tok.encode(SPACE_MARK + text)
        self.alt = alt or {}
        self.margin = margin

    def logits(self, tokens: list[int]) -> np.ndarray:
        z = np.full(V, -10.0, np.float32)  # a confident model: the rest is far below
        k = len(tokens)
        nxt = self.ids[k] if tokens == self.ids[:k] and k < len(self.ids) else END
        z[nxt] = self.margin
        for tok_id, value in self.alt.get(tuple(tokens), {}).items():
            z[tok_id] = value
        return z


def run(script: Script, tree: HotwordTree | None, max_tokens: int = 40) -> list[int]:
    """The decode loop of ``MoonshineModel.decode`` with ``script`` in place of the decoder
    (the "cache" is the token prefix the logits belong to)."""
    biasing = tree.start(max_tokens) if tree is not None else None
    tokens: list[int] = []
    cache = ()
    while len(tokens) < max_tokens:
        logits = script.logits(list(cache))
        if biasing is None:
            token = int(np.argmax(logits))
        else:
            token, cache = biasing.choose(tokens, logits, cache)
            assert list(cache) == tokens, "the returned cache belongs to the tokens kept"
        if token == END:
            break
        tokens.append(token)
        cache = tuple(tokens)
    return tokens if biasing is None else biasing.finish(tokens)


def test_bonus_turns_a_near_miss_into_the_hotword(tok):
    ids = {p: tok.encode(p) for p in ("▁call", "▁Siobhan", "▁Shimon")}
    call = ids["▁call"]
    sio = ids["▁Siobhan"]  # ▁S io b han
    # the model reads "call Shimon": "▁S" is 2 below "▁Sh", then each next Siobhan token 2 below
    alt = {tuple(call): {sio[0]: 8.0}}
    for k in range(1, len(sio)):
        alt[tuple(call + sio[:k])] = {sio[k]: 8.0, ids["▁Shimon"][-1]: 10.0}
    script = Script(tok, "call Shimon today", alt)
    plain = tok.decode(run(script, None))
    assert plain == "call Shimon today"
    tree = HotwordTree(["Siobhan"], tok, boost=6.0)
    # after Siobhan the script has no "today" (its prefix left the text): the model ends
    assert tok.decode(run(script, tree)) == "call Siobhan"


def test_a_reading_the_model_ends_at_once_is_never_steered_into_a_hotword(tok):
    """Issue 49: a clip that starts inside a word can read as nothing (the end token first); the
    bonus used to fill it with a listed name ("Siobhan, thanks" for "...ning everyone"), a false
    name alert. Where the model starts words, the same near miss still becomes the hotword."""
    sio = tok.encode("▁Siobhan")
    # the end token 2 above "▁S" at the first step; then each next Siobhan token sure
    alt = {(): {sio[0]: 8.0, END: 10.0}}
    for k in range(1, len(sio)):
        alt[tuple(sio[:k])] = {sio[k]: 12.0}
    script = Script(tok, "", alt)
    assert run(script, None) == []
    assert run(script, HotwordTree(["Siobhan"], tok, boost=6.0)) == []
    said = Script(tok, "call", {(*tok.encode("▁call"),): {sio[0]: 8.0, END: 10.0},
                               **{tuple(tok.encode("▁call") + sio[:k]): {sio[k]: 12.0} for k in range(1, len(sio))}})
    assert tok.decode(run(said, HotwordTree(["Siobhan"], tok, boost=6.0))) == "call Siobhan"


def test_an_abandoned_boosted_prefix_leaves_no_partial_word(tok):
    call = tok.encode("▁call")
    sio = tok.encode("▁Siobhan")
    # "▁S" is within the boost of "▁Sh", but after "▁S" the model wants "imon", far above "io"
    alt = {tuple(call): {sio[0]: 8.0}, tuple(call + sio[:1]): {tok.encode("imon")[0]: 20.0, sio[1]: 1.0}}
    script = Script(tok, "call Shimon today", alt)
    plain = run(script, None)
    tree = HotwordTree(["Siobhan"], tok, boost=MAX_BOOST)
    biased = run(script, tree)
    assert biased == plain, tok.decode(biased)
    assert tok.decode(biased) == "call Shimon today"


def test_a_hotword_the_model_finds_unlikely_is_given_back(tok):
    # each Siobhan token is just within the boost, but together far too unlikely (-9 each)
    call = tok.encode("▁call")
    sio = tok.encode("▁Siobhan")
    alt = {tuple(call + sio[:k]): {sio[k]: 1.0} for k in range(len(sio))}
    script = Script(tok, "call Shimon today", alt)
    assert tok.decode(run(script, HotwordTree(["Siobhan"], tok, boost=9.5))) == "call Shimon today"


def test_a_long_hotword_said_but_unfamiliar_is_kept(tok):
    # each Siobhan token 3.3 below the model's choice: together about -13 nats, which the
    # model gave hotwords that were said in bench/hotwords.py (Oravelle, Ferreira); the floor
    # at boost 6 is -15 (it was -12 and took such words back)
    call = tok.encode("▁call")
    sio = tok.encode("▁Siobhan")
    alt = {tuple(call + sio[:k]): {sio[k]: 6.7} for k in range(len(sio))}
    script = Script(tok, "call Shimon today", alt)
    assert tok.decode(run(script, HotwordTree(["Siobhan"], tok, boost=6.0))) == "call Siobhan"


def test_the_same_unfamiliar_hotword_needs_more_to_begin_a_line(tok):
    """Issue 49: about -13 nats is kept inside a line (above) but not as a line's first word, where
    the bonus wrote listed names over the model's least sure word (false name alerts); a
    hotword the model finds likelier is kept there too."""
    sio = tok.encode("▁Siobhan")
    shimon = tok.encode("▁Shimon")

    def first(margin_below: float) -> Script:
        alt = {tuple(sio[:k]): {sio[k]: 10.0 - margin_below} for k in range(len(sio))}
        alt[()][shimon[0]] = 10.0
        for k in range(1, len(shimon)):
            alt.setdefault(tuple(shimon[:k]), {})[shimon[k]] = 10.0
        return Script(tok, "Shimon called today", alt)

    tree = HotwordTree(["Siobhan"], tok, boost=6.0)
    assert tree.first_floor == -12.0 and tree.floor == -15.0
    assert tok.decode(run(first(3.3), tree)).startswith("Shimon")  # about -13 nats: given back
    assert tok.decode(run(first(2.0), tree)).startswith("Siobhan")  # about -8 nats: kept


def test_no_loop_at_the_largest_boost(tok):
    words = ["Xylophorix", "Siobhan", "Okonkwo"]
    firsts = {tok.encode(SPACE_MARK + w)[0] for w in words}
    spelled = [tok.encode(SPACE_MARK + w) for w in words]

    class Babble(Script):
        """Garbage where every hotword token is nearly as likely as the best one and the
        model never wants to stop: a boosted decoder's worst case."""

        def logits(self, tokens):
            z = np.full(V, -10.0, np.float32)
            z[tok.encode("▁the")[0]] = 2.0
            for ids in spelled:
                z[ids] = 1.5
            return z

    tree = HotwordTree(words, tok, boost=MAX_BOOST)
    out = run(Babble(tok, ""), tree, max_tokens=200)
    text = tok.decode(out).split()
    assert len(out) <= 200
    for i, w in enumerate(text):
        if w in words:  # never again within REENTRY_WORDS words
            assert w not in text[i + 1 : i + 1 + REENTRY_WORDS], text
    assert any(w in words for w in text) and firsts


def test_unrelated_list_changes_nothing_on_a_script(tok):
    script = Script(tok, "the meeting will start at nine tomorrow morning")
    tree = HotwordTree([f"Zorvan{i}" for i in range(100)] + ["Siobhan"], tok)
    assert run(script, tree) == run(script, None)


# -- the CLI refuses bad lists with one line ------------------------------------------------
@pytest.fixture
def wav(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    path = tmp_path / "x.wav"
    sf.write(path, np.zeros(1600, np.float32), 16000)
    return path


def _file(tmp_path, name, data: bytes):
    f = tmp_path / name
    f.write_bytes(data)
    return str(f)


@pytest.mark.parametrize("command", ["transcribe", "listen"])
@pytest.mark.parametrize("argv, needle", [
    (["--hotword", " "], "a hotword is empty"),
    (["--hotword", "Uni\U0001f984corn"], "cannot spell hotword"),
    (["--hotwords-file", "MANY"], "more than 500 hotwords"),
    (["--hotwords-file", "BINARY"], "is not UTF-8 text"),
    (["--hotwords-file", "MISSING"], "hotwords file not found"),
    (["--hotword", "Siobhan", "--hotword-boost", "11"], "between 0 and 10"),
    (["--hotword", "Siobhan", "--backend", "audio8", "--model", "."], "default and remote backends only"),
])
def test_cli_refuses_bad_lists_with_one_clear_line(wav, tmp_path, capfd, command, argv, needle):
    files = {"MANY": _file(tmp_path, "many.txt", "\n".join(f"Word{i}" for i in range(501)).encode()),
             "BINARY": _file(tmp_path, "bin.txt", b"\xff\xfe\x00\x01\x02garbage\x80"),
             "MISSING": str(tmp_path / "nope.txt")}
    argv = [files.get(a, a) for a in argv]
    args = ["transcribe", str(wav), *argv] if command == "transcribe" else ["listen", "--file", str(wav), *argv]
    assert main(args) == 2
    err = capfd.readouterr().err.strip()
    assert needle in err
    assert len(err.splitlines()) == 1, err


# -- the real model on espeak-ng speech ----------------------------------------------------
@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from captioner.asr.moonshine.model import MoonshineModel

    return MoonshineModel(default_model_dir(), cache_root=tmp_path_factory.mktemp("model-cache"))


def _clip(tmp_path, text: str, voice: str = "en-us") -> np.ndarray:
    import subprocess

    import soxr

    path = tmp_path / "clip.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", "160", "-w", str(path), text], check=True)
    audio, rate = sf.read(path, dtype="float32")
    audio = soxr.resample(audio, rate, 16000).astype(np.float32)
    return np.concatenate([np.zeros(4800, np.float32), audio, np.zeros(3200, np.float32)])


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
def test_biasing_turns_a_misread_name_right(model, tmp_path):
    audio = _clip(tmp_path, "Then call Siobhan and ask about the Kubernetes upgrade.")
    plain = model.transcribe(audio)
    assert "Kubernetes" not in plain  # the model misreads it without the list
    biased = model.transcribe(audio, bias=model.hotwords(["Siobhan", "Kubernetes", "Okonkwo"]))
    assert "Kubernetes" in biased and "Siobhan" in biased, (plain, biased)


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
def test_unrelated_list_leaves_a_clips_tokens_identical(model, tmp_path):
    from bench.hotwords import unrelated_words
    from tests.speech import SENTENCES

    tree = model.hotwords(unrelated_words(), MAX_BOOST / 2)
    for sentence in SENTENCES[:3]:
        audio = _clip(tmp_path, sentence)
        assert model.generate(audio, bias=tree) == model.generate(audio)


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
def test_the_model_emits_the_tokenizers_spelling(model, tmp_path):
    """What the model itself writes for a word is :meth:`Tokenizer.encode` of that word."""
    from tests.speech import SENTENCES

    words = same = 0
    for sentence in SENTENCES:
        ids = model.generate(_clip(tmp_path, sentence))
        word: list[int] = []
        for t in ids + [END]:
            piece = model.tokenizer.pieces[t].decode("utf-8", "replace") if t != END else SPACE_MARK
            if piece.startswith(SPACE_MARK) and word:
                words += 1
                same += model.tokenizer.encode(SPACE_MARK + model.tokenizer.decode(word)) == word
                word = []
            word.append(t)
    assert words > 40 and same == words, (same, words)


# -- the backend: partials and finals use the same list ---------------------------------------
def test_partials_and_finals_decode_with_the_same_list():
    from captioner.asr.moonshine import backend as ms
    from captioner.asr.base import StepRow
    from captioner.engine.scheduler import DecodeBudget
    from captioner.events import TextDelta
    from tests.test_retention import ScriptedModel, ScriptedVad, chunk_at

    class Recording(ScriptedModel):
        def __init__(self):
            super().__init__()
            self.biases = []

        def hotwords(self, words, boost=None):
            return ("tree", tuple(words), boost)

        def transcribe(self, audio, bias=None):
            self.biases.append(bias)
            return super().transcribe(audio)

    model = Recording()
    t = [0.0]
    backend = ms.MoonshineBackend(model=model, vad=ScriptedVad(), budget=DecodeBudget(clock=lambda: t[0]),
                                  hotwords=("Siobhan", "Okonkwo"), hotword_boost=5.0)
    backend._worker.close()
    backend._worker = ms.PartialWorker(backend._decode_clip, threaded=False)  # exact event order
    backend.budget.parallel = False
    state, kinds = None, set()
    for i in range(120):  # 12 s: two lines, partials while they are open
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk_at(i), state, i * 0.1, (i + 1) * 0.1)])
        state = res.state
        kinds |= {ev.final for ev in res.events if isinstance(ev, TextDelta) and ev.text}
    assert kinds == {True, False}
    assert model.biases and set(model.biases) == {("tree", ("Siobhan", "Okonkwo"), 5.0)}


def test_backend_refuses_a_list_the_model_cannot_use():
    from captioner.asr.moonshine import backend as ms
    from captioner.asr.base import BackendError
    from tests.test_retention import ScriptedModel, ScriptedVad

    class Refusing(ScriptedModel):
        def hotwords(self, words, boost=None):
            raise HotwordError("the built-in model cannot spell hotword 'x'")

    with pytest.raises(BackendError, match="cannot spell"):
        ms.MoonshineBackend(model=Refusing(), vad=ScriptedVad(), hotwords=("x",))


# -- a line's readings with a list (issue 48.1) -----------------------------------------------
def _reading(tok, text: str, lp: dict[str, float], rest: float, end: float = -0.05):
    """``(ids, logprobs)`` of a reading of ``text``: each token of a word in ``lp`` gets that
    log-probability, every other token ``rest``, and the end token ``end``."""
    ids: list[int] = []
    logprobs: list[float] = []
    for word in text.split():
        word_ids = tok.encode(SPACE_MARK + word)
        ids += word_ids
        logprobs += [lp.get(word.strip(".,:"), rest)] * len(word_ids)
    return ids, logprobs + [end]


def test_spans_are_whole_hotwords_in_either_spelling(tok):
    tree = HotwordTree(["Siobhan", "Kubernetes"], tok)
    ids = tok.encode(SPACE_MARK + "call Siobhan about Kubernetes")
    assert [(tok.decode(ids[s:e]), tree.words[w]) for s, e, w in tree.spans(ids)] == [
        ("Siobhan", "Siobhan"), ("Kubernetes", "Kubernetes")]
    assert tree.spans(tok.encode(SPACE_MARK + "call Siobhans")) == []  # a longer word is not the hotword
    bare = tok.encode("(Siobhan)")  # after punctuation: the spelling without a space
    assert [(s, e) for s, e, _ in tree.spans(bare)] == [(1, 5)]
    assert [(s, e) for s, e, _ in tree.spans(tok.encode("Siobhan"))] == [(0, 4)]  # at the start


def test_the_choice_prefers_the_steered_reading_when_the_rest_of_it_is_as_sure(tok):
    from captioner.asr.moonshine.hotwords import reading_score
    from captioner.asr.moonshine.framings import SURE_LOGPROB, surest

    tree = HotwordTree(["Siobhan"], tok)  # boost 6: a steered hotword is kept from -15 nats up
    # the bonus steered "Siobhan" in: the model alone gave its 4 tokens -3.5 each (-14 nats in all)
    steered = _reading(tok, "Then call Siobhan and ask about the upgrade.", {"Siobhan": -3.5}, -0.1)
    plain = _reading(tok, "Then call Shivon and ask about the upgrade.", {"Shivon": -0.9}, -0.15)
    # counted, the name sinks the reading that has it right (today's mean log-probability)
    assert np.mean(steered[1]) < np.mean(plain[1]) < SURE_LOGPROB
    cut = ("Then call Siobhan and ask about the upgrade.", reading_score(*steered, tree))
    framed = ("Then call Shivon and ask about the upgrade.", reading_score(*plain, tree))
    assert cut[1] == pytest.approx(np.mean([-0.1] * (len(steered[0]) - 4) + [-0.05]))  # the name left out
    assert framed[1] == pytest.approx(np.mean(plain[1]))  # no hotword in it: the plain mean
    assert surest([framed, cut], 3 * 16000)[0] == cut[0]
    # ... but not when the words around the name are much less sure than the other reading's
    unsure = _reading(tok, "Then call Siobhan and ask about the upgrade.", {"Siobhan": -3.5}, -0.6)
    assert surest([framed, ("x", reading_score(*unsure, tree))], 3 * 16000)[0] == framed[0]
    # ... nor when the model gave the name less than a steered hotword must reach (here a
    # respelling, which has its own rule): it counts in full
    far = _reading(tok, "Then call Siobhan and ask about the upgrade.", {"Siobhan": -4.0}, -0.1)
    assert tree.floor == -15.0 and reading_score(*far, tree) == pytest.approx(np.mean(far[1]))


def test_a_hotword_a_reading_repeats_counts_in_full(tok):
    """"Siobhan: Siobhan: Siobhan:" (a loop the steered name started; each repeat likely to the
    model) must not win over the reading of what was said by leaving the name's tokens out."""
    from captioner.asr.moonshine.hotwords import reading_score

    tree = HotwordTree(["Siobhan"], tok)
    loop = _reading(tok, "Siobhan: Siobhan: Siobhan: Siobhan:", {}, -0.05)
    loop[1][:4] = [-0.8, -9.9, -1.8, 0.0]  # the first one steered, the repeats sure
    said = _reading(tok, "Social is flying to Reykjavik on Tuesday.", {}, -0.27)
    assert reading_score(*loop, tree) == pytest.approx(np.mean(loop[1]))
    assert reading_score(*loop, tree) < reading_score(*said, tree)


@pytest.mark.parametrize("words", [[], [f"Zorvan{i}" for i in range(100)] + ["Siobhan", "Okonkwo"]])
def test_without_a_list_or_with_one_no_reading_spells_the_score_is_the_plain_mean(tok, words):
    from captioner.asr.moonshine.hotwords import reading_score

    ids, lp = _reading(tok, "The meeting will start at nine tomorrow morning.", {"nine": -1.3}, -0.2)
    tree = HotwordTree(words, tok) if words else None
    assert reading_score(ids, lp, tree) == reading_score(ids, lp) == float(np.mean(lp))  # exactly
    assert reading_score([], [], tree) == 0.0


def test_a_completed_hotword_does_not_start_again_in_its_bare_spelling(tok):
    """After "Siobhan" and a colon the bare spelling ("S" "io" "b" "han", no space) was not
    blocked like the spaced one: "Siobhan:Siobhan:Siobhan" looped (seen on a Kokoro voice)."""
    spaced, bare, colon = tok.encode("▁Siobhan"), tok.encode("Siobhan"), tok.encode(":")[0]
    the = tok.encode("▁the")[0]

    class Colons(Script):
        """Babble: "the" is best; after a word, a colon nearly as likely; every Siobhan token,
        spaced or bare, within the boost."""

        def logits(self, tokens):
            z = np.full(V, -10.0, np.float32)
            z[the] = 2.0
            if tokens and tokens[-1] != colon:
                z[colon] = 2.5 if tokens[-len(spaced):] in (spaced, bare) else -10.0
            z[spaced] = -1.0
            z[bare] = -1.0
            return z

    tree = HotwordTree(["Siobhan"], tok, boost=MAX_BOOST)
    out = run(Colons(tok, ""), tree, max_tokens=120)
    spans = tree.spans(out)
    assert spans, tok.decode(out)
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):  # REENTRY_WORDS words between two
        assert sum(bool(tree.starts_word[t]) for t in out[end:start]) >= REENTRY_WORDS, tok.decode(out)


class _Readings:
    """A scored model: every reading unsure (so a line is read five times), each call's
    ``bias`` recorded; cancellable (reads at once live)."""

    cancellable = True

    def __init__(self):
        import threading

        self.biases: list = []
        self.lock = threading.Lock()

    def transcribe_scored(self, audio, bias=None, stop=None):
        with self.lock:
            self.biases.append(bias)
        return "Then call Siobhan.", -0.5

    def transcribe(self, audio, bias=None):  # pragma: no cover - transcribe_scored is used
        raise AssertionError("transcribe_scored should be used")


@pytest.mark.parametrize("at_once", [False, True])
def test_every_reading_of_a_line_decodes_with_the_list(tok, at_once):
    from captioner.asr.moonshine.framings import FURTHER_RATES
    from captioner.asr.moonshine.line_framing import LineReader

    tree = HotwordTree(["Siobhan"], tok)
    model = _Readings()
    reader = LineReader(model, {"bias": tree}, at_once=at_once)
    try:
        assert reader.read(np.zeros(2 * 16000, np.float32)) == "Then call Siobhan."
    finally:
        reader.close()
    assert len(model.biases) == 2 + len(FURTHER_RATES) and all(b is tree for b in model.biases)


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
@pytest.mark.parametrize("sentence, voice, names", [
    ("Abernathy approved the budget for Quantaloop.", "en-029", ["Abernathy", "Quantaloop"]),
    ("Ngozi will demo Kryptalis to the board on Monday.", "en-gb-scotland", ["Ngozi", "Kryptalis"]),
])
def test_a_lines_readings_keep_the_names_the_list_steered(model, tmp_path, sentence, voice, names):
    """Read as a completed line is (five readings, the surest kept), the names are kept; when
    the readings were compared with the names' tokens counted, this line lost both
    (``bench/hotwords.py``'s sentences 19 and 10: "I will not be approved the mortgage for one
    Talobe.", "And only will they move with Tannins to the mall on Monday.")."""
    from captioner.asr.moonshine.line_framing import LineReader

    audio = _clip(tmp_path, sentence, voice)
    text = LineReader(model, {"bias": model.hotwords(names)}).read(audio)
    assert all(name in text for name in names), text


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
def test_an_unrelated_list_leaves_a_lines_readings_and_choice_identical(model, tmp_path):
    from bench.hotwords import unrelated_words
    from captioner.asr.moonshine.line_framing import LineReader
    from tests.speech import SENTENCES

    tree = model.hotwords(unrelated_words())
    for sentence in SENTENCES[:3]:
        audio = _clip(tmp_path, sentence)
        assert model.transcribe_scored(audio, bias=tree) == model.transcribe_scored(audio)
        assert LineReader(model, {"bias": tree}).read(audio) == LineReader(model).read(audio)
