"""Hotword speculation: a steered hotword's next step runs in one decoder batch beside the plain path's.

With a hotword list (:mod:`captioner.asr.moonshine.hotwords`) the bonus often steers a hotword's first
token in where the model itself would write another word, and most such matches are given back
a token or two later (the model does not follow the hotword), resuming from the plain path. While
a steered match is open, :class:`Speculation` therefore runs the plain path's next step in the
same decoder call as the hotword's (a batch of 2, or 3 with the place's second try), so that the
usual give-back finds the plain steps already done (issue 28: decoder runs with 500 unrelated
words 1.29x -> 1.16x of no list, same tokens).

A batch of 2 costs ~1.1 single steps only with the decoder's MatMul weights prepacked (without,
~2.3). The 8-bit decoder (:mod:`~captioner.asr.moonshine.int8`) is always prepacked: a batch
of 2 there costs ~1.2 single steps, of 3 ~1.5 (measured 2026-12-06: 6.9 / 8.2 / 10.4 ms). A
float decoder (a CPU without fast int8 kernels) pays ~57 MB of resident memory for it, so
:class:`~captioner.asr.moonshine.model.MoonshineModel` prepacks a float decoder only once a
hotword list is set (:meth:`~captioner.asr.moonshine.model.MoonshineModel.hotwords`, issue 40). The decoder is the default model's merged decoder on ONNX Runtime (graph: see
:mod:`captioner.asr.moonshine.model`); the state is one reading's, never shared between threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: With a hotword list, run a steered hotword's tokens beside the plain path's (and a place's
#: second try) in one batch of 2 or 3 (:class:`Speculation`), and prepack a float decoder's
#: weights for it when a list is set (+57 MB resident; the 8-bit decoder always is). False: one step at a time, no prepacking (same
#: tokens, ~1.16x the decoder runs with 500 hotwords).
SPECULATE = True


class Speculation:
    """One reading's speculative steps under a hotword list.

    Args:
        decoder: the ``onnxruntime.InferenceSession`` of the merged decoder the reading runs on.
        outputs: the decoder's output names, logits first then the ``present.*`` caches.
        hidden: the clip's encoder states ``[1, T, 416] float32``.

    Attributes:
        spare: token prefix -> the decoder outputs (``OrtValue`` s, batch of 1) of the step that
            follows it, computed beside a steered match; :meth:`take` hands them out.
        chain: the plain path beside the open steered match: its last prefix in ``spare``.
        cross: step 0's outputs (their cross-attention cache is the same at every step).
    """

    def __init__(self, decoder: Any, outputs: list[str], hidden: np.ndarray) -> None:
        self.decoder, self.outputs, self.hidden = decoder, outputs, hidden
        self.spare: dict[tuple, list] = {}
        self.chain: tuple | None = None
        self.cross: list | None = None
        self._fixed: dict = {}  # batch size -> the batch's encoder states and cross-attention cache

    def take(self, tokens: list[int]) -> list | None:
        """The outputs of the step after ``tokens`` if a batch already ran it (then forgotten), else None."""
        return self.spare.pop(tuple(tokens), None) if self.spare else None

    def seen(self, outs: list) -> None:
        """Note a step's outputs: the first call's are step 0's (the cross-attention cache)."""
        if self.cross is None:
            self.cross = outs

    def after(self, biasing: Any, tokens: list[int], chosen: np.ndarray, token: int, outs: list) -> list | None:
        """After ``token`` was appended to ``tokens`` (chosen from the biased logits ``chosen``
        ``[V]``, with ``outs`` the outputs that scored it): when a steered hotword starts at it or
        goes on through it, run the next step of ``tokens`` in one batch with the plain path's
        (and at a start the place's second try, :meth:`~captioner.asr.moonshine.hotwords.Biasing.next_try`)
        and return the outputs of ``tokens``' next step; None when nothing was run (the caller
        runs the step itself). ``biasing``: the reading's :class:`~captioner.asr.moonshine.hotwords.Biasing`.

        Raises:
            Exception: ONNX Runtime's own, when the decoder fails.
        """
        from captioner.asr.moonshine.tokenizer import END

        pos = len(tokens) - 1
        if biasing.started(pos) and tuple(tokens) not in self.spare:  # (a second try's start: run with the first)
            prefix = tuple(tokens[:-1])
            plain = int(np.argmax(chosen))  # the token a give-back would most likely choose here
            if plain == END:
                return None
            nxt = biasing.next_try(tokens[:-1], chosen, token)  # the place's second try, if any
            firsts = [token, plain] + ([nxt] if nxt not in (None, END, token, plain) else [])
            pending, *rest = batch(self.decoder, self.outputs, self.hidden, [outs] * len(firsts), self.cross,
                                   firsts, self._fixed)
            self.spare.update((prefix + (t,), o) for t, o in zip(firsts[1:], rest))
            self.chain = prefix + (plain,)
            return pending
        chain = self.chain
        if biasing.deep(pos) and chain is not None and len(chain) == pos and chain in self.spare \
                and chain[:biasing.snapshot.pos] == tuple(tokens[:biasing.snapshot.pos]):
            # inside a steered match: run the plain path's next step too, so that a give-back
            # after a later token of the hotword also finds the plain steps done
            guess = int(np.argmax(self.spare[chain][0].numpy()[0, -1]))
            if guess != END:
                pending, self.spare[chain + (guess,)] = batch(self.decoder, self.outputs, self.hidden,
                                                              [outs, self.spare[chain]], self.cross,
                                                              [token, guess], self._fixed)
                self.chain = chain + (guess,)
                return pending
        return None


def batch(decoder: Any, outputs: list[str], hidden: np.ndarray, states: list[list], cross: list,
          firsts: list[int], fixed: dict | None = None) -> list[list]:
    """The decoder's next step for each of ``firsts`` (2 or 3 tokens) at once, ``firsts[i]``
    after the prefix of ``states[i]`` (prefixes of one length; one batch; ``cross``: step
    0's outputs): per token, its outputs (``OrtValue`` s) as a batch of 1.

    With prepacked weights the decoder runs a batch of 2 in ~1.1 single steps, of 3 in ~1.3
    (2026-12-02, the 2-core development machine), a give-back 1 each. ``fixed``: a dict kept
    for one clip, where the batch's copies of the encoder states ``hidden`` ``[1, T, 416]`` and
    of the cross-attention cache (the same at every step) are made once per batch size.

    Raises:
        Exception: ONNX Runtime's own, when the decoder fails.
    """
    import onnxruntime as ort

    n = len(firsts)
    fixed = {} if fixed is None else fixed
    if n not in fixed:
        fixed[n] = {"encoder_hidden_states": ort.OrtValue.ortvalue_from_numpy(np.repeat(hidden, n, 0))}
        for name, step0 in zip(outputs[1:], cross[1:]):
            if ".encoder." in name:
                fixed[n][name.replace("present", "past_key_values")] = ort.OrtValue.ortvalue_from_numpy(
                    np.repeat(step0.numpy(), n, 0))
    binding = decoder.io_binding()
    for name, value in fixed[n].items():
        binding.bind_ortvalue_input(name, value)
    binding.bind_cpu_input("input_ids", np.array(firsts, np.int64).reshape(n, 1))
    binding.bind_cpu_input("use_cache_branch", np.array([True]))
    for k, name in enumerate(outputs[1:], 1):
        if ".decoder." in name:
            binding.bind_cpu_input(name.replace("present", "past_key_values"),
                                   np.concatenate([st[k].numpy() for st in states]))
    for name in outputs:
        binding.bind_output(name, "cpu")
    decoder.run_with_iobinding(binding)
    out = []
    for o, name, step0 in zip(binding.get_outputs(), outputs, [None] + list(cross[1:])):
        # the cross-attention outputs are step 0's again (never read after step 0): not copied
        out.append([step0] * n if ".encoder." in name else np.split(o.numpy(), n))
    return [[x if isinstance(x, ort.OrtValue) else ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(x))
             for x in (col[i] for col in out)] for i in range(n)]
