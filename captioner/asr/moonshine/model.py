"""Moonshine base-en on ONNX Runtime: encoder once per clip, greedy decoding with the KV cache.

One :class:`MoonshineModel` per process is shared by every caller (the finals on the engine
thread, the partials on their own thread, every source): ONNX Runtime sessions allow
concurrent ``Run`` calls, and each :meth:`MoonshineModel.transcribe` keeps its state (I/O
binding, cache) to itself.

Graphs (prepared by :mod:`captioner.asr.moonshine.prepare`; DESIGN section 4):

* encoder: ``input_values [B, samples] float32`` (16 kHz, [-1, 1]) ->
  ``last_hidden_state [B, T, 416]`` (T ~ 41 frames per second of audio);
* merged decoder: ``input_ids [B, 1] int64``, ``encoder_hidden_states [B, T, 416]``,
  ``past_key_values.{0..7}.{decoder,encoder}.{key,value} [B, 8, L, 52]``,
  ``use_cache_branch [1] bool`` -> ``logits [B, 1, 32768]`` and the ``present.*`` caches.
  The first step (no cache) computes the cross-attention keys/values from the encoder
  output; later steps reuse them and grow the self-attention cache by one position.

Each step binds the previous step's ``present`` outputs as the next ``past`` inputs in
place (``IOBinding`` with ORT-owned ``OrtValue`` s), so no cache array is copied through
numpy; ONNX Runtime serves the outputs from its arena. Decoding stops at the end token or
after :data:`TOKENS_PER_S` tokens per second of audio (no runaway repetition). A reading
may start from a draft (an earlier reading of the same line): the decoder scores all of its
tokens in one run and steps on after the longest prefix greedy decoding itself would choose
(:func:`~captioner.asr.moonshine.draft_tokens.check_draft`); where the reading leaves the draft, each step checks the
draft's tokens that follow the last one read along with it (:mod:`captioner.asr.moonshine.draft_tokens`):
the same tokens for far fewer runs. With a
hotword list (:mod:`captioner.asr.moonshine.hotwords`) the greedy choice adds a bonus to hotword
tokens, and a steered match that is abandoned resumes from the step's kept outputs (its plain
steps often already run beside the steered ones: :mod:`captioner.asr.moonshine.hotword_speculation`, with
the decoder's weights prepacked once a list is set); as each word completes, a word that sounds like a hotword is respelled when the model, teacher-forced
from the kept outputs of the step where the word began, agrees
(:mod:`captioner.asr.moonshine.hotword_respell`), and decoding goes on after the hotword.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from captioner import heap
from captioner.asr.base import BackendError, DecodeCancelled
from captioner.asr.hotword_list import check_hotwords
from captioner.asr.moonshine import hotword_speculation
from captioner.asr.moonshine.draft_tokens import check_draft, continuation, log_softmax_at
from captioner.asr.moonshine.hotword_respell import Respelling, teacher_forcing
from captioner.asr.moonshine.hotword_speculation import Speculation
from captioner.asr.moonshine.hotwords import HotwordTree, reading_score
from captioner.asr.moonshine.ort_options import session_options
from captioner.asr.moonshine.prepare import PreparedModel, Progress, prepare, weights_file
from captioner.asr.moonshine.tokenizer import END, START, Tokenizer

#: Token budget per second of audio. English speech runs at ~3-4 tokens/s; Moonshine's own
#: reference decoder stops at 6.5 tokens per second of audio (its ``max_tokens_per_second``).
TOKENS_PER_S = 6.5
#: Most draft tokens checked in one run on the cache after a reading left its draft
#: (:func:`~captioner.asr.moonshine.draft_tokens.check_draft`): a run on 10 positions costs ~1.7 plain steps, so a wrong
#: guess costs little and a right one saves up to 10 steps.
LOOKAHEAD = 10
#: Smallest token budget of a clip (a very short clip still reads a word or two).
MIN_TOKENS = 6
LAYERS, HEADS, HEAD_DIM = 8, 8, 52
SAMPLE_RATE = 16000


class MoonshineModel:
    """The loaded encoder, merged decoder and tokenizer of one model folder.

    Args:
        model_dir: folder with ``encoder_model.ort``, ``decoder_model_merged.ort`` and
            ``tokenizer.bin`` (the shipped files).
        cache_root: where the prepared copy is cached (default: the user cache folder).
        progress: ``progress(message, percent)`` while the model is prepared (first use).
        prepared: an already prepared model (skips :func:`prepare`; tests).

    Raises:
        BackendError: files missing or unreadable, or ONNX Runtime cannot load them.
    """

    #: :meth:`transcribe_scored` takes ``stop`` (:mod:`captioner.asr.moonshine.line_framing` may cancel a reading)
    cancellable = True
    #: the readings take ``draft`` (an earlier reading's tokens: :meth:`decode`)
    drafts = True
    #: :meth:`transcribe_scored` takes ``min_tokens`` (:mod:`captioner.asr.moonshine.empty_lines`)
    forces_words = True

    def __init__(self, model_dir: str | os.PathLike, *, cache_root: str | os.PathLike | None = None,
                 progress: Progress | None = None, prepared: PreparedModel | None = None) -> None:
        import onnxruntime as ort

        self.model_dir = Path(model_dir)
        try:
            self.tokenizer = Tokenizer(self.model_dir / "tokenizer.bin")
        except (OSError, ValueError) as exc:
            raise BackendError(f"Cannot read the default model's tokenizer ({exc})") from exc
        self.prepared = prepared or prepare(self.model_dir, cache_root, progress)
        heap.tune()  # the arena is off: big activation buffers are mapped and given back
        try:
            self.encoder = ort.InferenceSession(self.prepared.encoder, session_options(),
                                                providers=["CPUExecutionProvider"])
            # the 8-bit decoder's fast kernels need their weights prepacked (moonshine.int8)
            int8 = self.prepared.int8_decoder
            self.decoder = ort.InferenceSession(self.prepared.decoder, session_options(prepack=int8),
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise BackendError(f"Could not load the prepared default model ({exc})") from exc
        #: the decoder's weights are prepacked (always for the 8-bit decoder; a float one once
        #: :meth:`hotwords` swaps in such a session)
        self.prepacked = int8
        self._pack_lock = threading.Lock()
        self._past = [f"past_key_values.{i}.{kind}.{kv}" for i in range(LAYERS)
                      for kind in ("decoder", "encoder") for kv in ("key", "value")]
        self._outputs = [o.name for o in self.decoder.get_outputs()]
        self._empty = np.zeros((1, HEADS, 0, HEAD_DIM), np.float32)
        if int8:
            self._packed()

    def encode(self, audio: np.ndarray) -> np.ndarray:
        """``[n] float32`` 16 kHz samples -> ``[1, T, 416] float32`` encoder states.

        Raises:
            BackendError: ONNX Runtime failed (e.g. a clip too short for the encoder).
        """
        x = np.ascontiguousarray(audio, dtype=np.float32).reshape(1, -1)
        try:
            return self.encoder.run(None, {"input_values": x})[0]
        except Exception as exc:
            raise BackendError(f"default model encoder failed ({exc})") from exc

    def max_tokens(self, n_samples: int) -> int:
        """Token budget of a clip of ``n_samples`` samples (:data:`TOKENS_PER_S`)."""
        return max(MIN_TOKENS, int(np.ceil(n_samples / SAMPLE_RATE * TOKENS_PER_S)))

    def generate(self, audio: np.ndarray, max_tokens: int | None = None, bias: HotwordTree | None = None,
                 logprobs: list[float] | None = None, stop: threading.Event | None = None,
                 draft: Sequence[int] | None = None, min_tokens: int = 0) -> list[int]:
        """Greedy token ids of ``[n] float32`` 16 kHz samples (without start/end tokens).

        ``bias``, ``logprobs``, ``stop``, ``draft`` and ``min_tokens``: see :meth:`decode`.

        Raises:
            BackendError: ONNX Runtime failed.
            DecodeCancelled: ``stop`` was set.
        """
        if len(audio) < SAMPLE_RATE // 10:  # under 0.1 s: nothing the encoder can read
            return []
        if stop is not None and stop.is_set():  # cancelled while queued: not even the encoder
            raise DecodeCancelled("the reading is not needed any more")
        hidden = self.encode(audio)
        budget = self.max_tokens(len(audio)) if max_tokens is None else int(max_tokens)
        return self.decode(hidden, budget, bias, logprobs, stop, draft, min_tokens)

    def decode(self, hidden: np.ndarray, max_tokens: int, bias: HotwordTree | None = None,
               logprobs: list[float] | None = None, stop: threading.Event | None = None,
               draft: Sequence[int] | None = None, min_tokens: int = 0) -> list[int]:
        """Greedy decoding from encoder states ``[1, T, 416]``, at most ``max_tokens`` tokens.

        Args:
            bias: hotwords whose next tokens get a bonus (:mod:`captioner.asr.moonshine.hotwords`:
                it may take back a steered match and resume from an earlier step's cache).
            logprobs: when a list is given, the natural-log probability (without any hotword
                bonus) of every kept token (the end token included when it was reached) is
                appended to it; a match the biasing takes back takes its entries with it.
            stop: checked before every decoder step; once set, decoding ends with
                :class:`~captioner.asr.base.DecodeCancelled` (a reading nobody needs any more).
            draft: token ids the reading is expected to start with (an earlier reading of the
                same words: the open line's previous re-decode). They are checked in one
                decoder run (:func:`~captioner.asr.moonshine.draft_tokens.check_draft`) and greedy steps go on after the longest prefix
                of them that greedy decoding itself would choose; after that, each step runs
                on the cache together with up to :data:`LOOKAHEAD` draft tokens that follow
                the last token read (:func:`~captioner.asr.moonshine.draft_tokens.continuation`) and keeps
                those greedy decoding would choose. The tokens are the same as without a draft
                (up to rounding between one run on many positions and one step per
                position: log-probabilities within ~5e-3 with the 8-bit decoder's int8
                products). Not used with ``bias`` (the hotwords steer each step).
            min_tokens: the end token is not chosen before this many tokens (transformers'
                ``min_new_tokens``: its logit is set to -inf for the choice). The log-probabilities
                kept are still the model's own, the end token's share included (unlike
                transformers' processed scores): a word forced where the model would have
                ended scores as unlikely as the model found it.

        Raises:
            BackendError: ONNX Runtime failed.
            DecodeCancelled: ``stop`` was set.
        """
        decoder = self.decoder  # one session for the whole reading (hotwords() may swap in a prepacked one)
        try:
            binding = decoder.io_binding()
            binding.bind_cpu_input("encoder_hidden_states", hidden)
            for name in self._past:
                binding.bind_cpu_input(name, self._empty)
            ids = np.array([[START]], np.int64)
            flag = np.array([False])
            biasing = bias.start(max_tokens) if bias is not None and len(bias) else None
            respell = Respelling(bias, teacher_forcing(decoder, self._outputs, hidden)) if biasing is not None else None
            speculation = (Speculation(decoder, self._outputs, hidden)
                           if biasing is not None and hotword_speculation.SPECULATE else None)
            tokens: list[int] = []
            states: list[list | None] = []  # per position: the decoder outputs whose logits chose its token
            pending = None  # a respelling's teacher-forced outputs: the next step's, no decoder run
            draft = list(draft) if draft and biasing is None else []
            if draft and max_tokens > 0:
                if stop is not None and stop.is_set():
                    raise DecodeCancelled("the reading is not needed any more")
                kept, pending = check_draft(decoder, self._outputs, binding, START, draft[:max_tokens], logprobs,
                                            cached=False)
                tokens = draft[:kept]
            while len(tokens) < max_tokens:
                if stop is not None and stop.is_set():
                    raise DecodeCancelled("the reading is not needed any more")
                if pending is None and speculation is not None:
                    pending = speculation.take(tokens)
                if pending is None and draft and flag[0] and (
                        more := continuation(draft, tokens)[: min(LOOKAHEAD, max_tokens - len(tokens))]):
                    # the draft again after the reading left it: its tokens that follow the
                    # last one read, checked with the next step in one run on the cache
                    kept, pending = check_draft(decoder, self._outputs, binding, tokens[-1], more, logprobs,
                                                cached=True)
                    tokens += more[:kept]
                    continue
                if pending is None:
                    for name in self._outputs:  # fresh outputs each step (their shapes change)
                        binding.bind_output(name, "cpu")
                    binding.bind_cpu_input("input_ids", ids)
                    binding.bind_cpu_input("use_cache_branch", flag)
                    decoder.run_with_iobinding(binding)
                    outs = binding.get_outputs()
                else:
                    outs, pending = pending, None
                logits = raw = outs[0].numpy()[0, -1]
                if len(tokens) < min_tokens:  # transformers' min_new_tokens: the end token may not come yet
                    logits = logits.copy()
                    logits[END] = -np.inf
                if biasing is None:
                    token, chosen = int(np.argmax(logits)), logits
                else:  # may shorten tokens and hand back an earlier step's outputs
                    if speculation is not None:
                        speculation.seen(outs)  # step 0's: the cross-attention cache
                    token, outs = biasing.choose(tokens, logits, outs)
                    chosen = biasing.logits
                    del states[len(tokens):]
                    states.append(outs)
                    swap = respell.check(tokens, states, token)
                    if swap is not None:  # a word respelled as a hotword: go on after it
                        cand, forced_lp, pending = swap
                        del tokens[cand.start:], states[cand.start:]
                        tokens += cand.ids
                        states += [None] * len(cand.ids)
                        biasing.respelled(cand.start, len(tokens), cand.ids[0])
                        if logprobs is not None:
                            del logprobs[cand.start:]
                            logprobs += forced_lp
                        continue
                if logprobs is not None:
                    del logprobs[len(tokens):]
                    logprobs.append(log_softmax_at(raw if chosen is logits else chosen, token))
                if token == END:
                    break
                tokens.append(token)
                ids[0, 0] = token
                for name, value in zip(self._outputs[1:], outs[1:]):
                    if not flag[0] or ".decoder." in name:  # cross-attention cache: from step 0 only
                        binding.bind_ortvalue_input(name.replace("present", "past_key_values"), value)
                flag[0] = True
                if speculation is not None:  # a steered hotword open: its next step beside the plain path's
                    pending = speculation.after(biasing, tokens, chosen, token, outs)
            return tokens if biasing is None else biasing.finish(tokens)
        except DecodeCancelled:
            raise
        except Exception as exc:  # onnxruntime raises its own exception types
            raise BackendError(f"default model decoder failed ({exc})") from exc

    def transcribe_scored(self, audio: np.ndarray, bias: HotwordTree | None = None,
                          stop: threading.Event | None = None,
                          draft: Sequence[int] | None = None, min_tokens: int = 0) -> tuple[str, float]:
        """Text of ``[n] float32`` 16 kHz samples and the mean log-probability (natural log,
        <= 0) of its greedy tokens, the end token included: the model's confidence in
        its reading, comparable between framings of one line. ``("", 0.0)`` for < 0.1 s;
        ``bias``: hotwords to prefer (the tokens that spell one are left out of the mean:
        :func:`~captioner.asr.moonshine.hotwords.reading_score`), ``stop``: cancels the
        reading, ``draft``: tokens the reading likely starts with, ``min_tokens``: no end
        token before this many (:meth:`decode`).

        Raises:
            BackendError: ONNX Runtime failed.
            DecodeCancelled: ``stop`` was set.
        """
        logprobs: list[float] = []
        ids = self.generate(audio, bias=bias, logprobs=logprobs, stop=stop, draft=draft, min_tokens=min_tokens)
        return self.tokenizer.decode(ids), reading_score(ids, logprobs, bias)

    def transcribe(self, audio: np.ndarray, bias: HotwordTree | None = None,
                   draft: Sequence[int] | None = None) -> str:
        """Text of ``[n] float32`` 16 kHz samples in one pass ("" for silence or < 0.1 s);
        ``bias``: hotwords to prefer (:meth:`hotwords`); ``draft``: see :meth:`decode`.

        Raises:
            BackendError: ONNX Runtime failed.
        """
        return self.transcribe_tokens(audio, bias, draft)[0]

    def transcribe_tokens(self, audio: np.ndarray, bias: HotwordTree | None = None,
                          draft: Sequence[int] | None = None,
                          confidence: list[float] | None = None) -> tuple[str, list[int]]:
        """As :meth:`transcribe`, and the reading's token ids (the next reading's ``draft``).

        Args:
            confidence: when a list is given, it is replaced by one value per word of the
                text (``text.split()``): the natural-log probability of the word's least
                likely token, without any hotword bonus
                (:meth:`~captioner.asr.moonshine.tokenizer.Tokenizer.word_minima`); ``[]``
                when the words cannot be matched to the tokens.

        Raises:
            BackendError: ONNX Runtime failed.
        """
        logprobs: list[float] | None = [] if confidence is not None else None
        ids = self.generate(audio, bias=bias, draft=draft, logprobs=logprobs)
        text = self.tokenizer.decode(ids)
        if confidence is not None:
            minima = self.tokenizer.word_minima(ids, logprobs)
            confidence[:] = minima if len(minima) == len(text.split()) else []
        return text, ids

    def hotwords(self, words, boost: float | None = None) -> HotwordTree:
        """The prefix tree of ``words`` (checked: :func:`captioner.asr.hotword_list.check_hotwords`)
        spelled by this model's tokenizer, with ``boost`` (default
        :data:`~captioner.asr.hotword_list.DEFAULT_BOOST`) for :meth:`transcribe`. A list
        of at least one word prepacks the decoder first (:meth:`prepack`), for the process.

        Raises:
            HotwordError: a word the tokenizer cannot spell, or a boost out of range.
            BackendError: ONNX Runtime cannot load the prepacked decoder.
        """
        from captioner.asr.hotword_list import DEFAULT_BOOST, spelling_problem

        words = check_hotwords(words, lambda w: spelling_problem(w, self.tokenizer))
        tree = HotwordTree(words, self.tokenizer, DEFAULT_BOOST if boost is None else boost)
        if len(tree) and hotword_speculation.SPECULATE:
            self.prepack()
        return tree

    def prepack(self) -> None:
        """Swap in a decoder session with its weights prepacked (:func:`session_options`), once.

        The hotwords' speculative batches need it (:mod:`captioner.asr.moonshine.hotword_speculation`),
        plain decoding does not: it costs ~57 MB of resident memory (issue 40), so a model
        without a hotword list never pays it. Readings already running finish on the session
        they started with (:meth:`decode` keeps it); the same tokens either way, up to float
        rounding (log-probabilities within ~1e-5).

        Raises:
            BackendError: ONNX Runtime cannot load the prepacked decoder.
        """
        import onnxruntime as ort

        with self._pack_lock:  # two backends setting lists at once load it once
            if self.prepacked:
                return
            try:
                self.decoder = ort.InferenceSession(self.prepared.decoder, session_options(prepack=True),
                                                    providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime raises its own exception types
                raise BackendError(f"Could not load the prepared default model ({exc})") from exc
            self.prepacked = True
        self._packed()

    def _packed(self) -> None:
        """After a prepacked decoder session is made: the packing's freed buffers back to the
        system, and the weights file's pages it read (the session runs on its packed copy;
        the few it reads again, the token lookup's rows, come back from the file)."""
        if not isinstance(self.prepared.decoder, bytes):  # a copy in memory maps no file
            heap.release_file_pages(weights_file(self.prepared.decoder))
        heap.trim(force=True)


_SHARED: dict[tuple, MoonshineModel] = {}
_SHARED_LOCK = threading.Lock()


def shared_model(model_dir: str | os.PathLike, progress: Progress | None = None) -> MoonshineModel:
    """The process's one :class:`MoonshineModel` of ``model_dir`` (loaded on first use).

    Raises:
        BackendError: as :class:`MoonshineModel`.
    """
    key = (str(Path(model_dir).resolve()),)
    with _SHARED_LOCK:  # two backends loading at once share one load
        model = _SHARED.get(key)
        if model is None:
            model = _SHARED[key] = MoonshineModel(model_dir, progress=progress)
        return model
