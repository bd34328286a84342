"""A line the two framings leave unsure is read again 10 % slower and 10 % faster (issue 40.1).

The readings are told apart by their length (:func:`captioner.asr.moonshine.framings.retimed`
resamples the clip, then frames it), so a scripted model can answer each one differently.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from captioner.asr.base import BackendError, DecodeCancelled
from captioner.asr.moonshine.framings import FRAME_LEAD_S, FRAME_TAIL_S, FURTHER_RATES, SURE_LOGPROB, retimed, surest
from captioner.asr.moonshine.line_framing import LineReader

SR = 16000
PAD = int(FRAME_LEAD_S * SR) + int(FRAME_TAIL_S * SR)


def line(seconds: float = 2.0) -> np.ndarray:
    return (0.1 * np.sin(np.arange(int(seconds * SR)) / 7.0)).astype(np.float32)


def kind_of(n_clip: int, n_audio: int) -> str:
    """Which reading of a clip of ``n_clip`` samples a decode of ``n_audio`` samples is:
    cut, framed, then one name per rate of FURTHER_RATES (0.9, 1.1, 1.2)."""
    if n_audio == n_clip:
        return "cut"
    if n_audio == n_clip + PAD:
        return "framed"
    names = {0.9: "slower", 1.1: "faster", 1.2: "fastest"}
    return min(names.items(), key=lambda kv: abs(n_clip / kv[0] + PAD - n_audio))[1]


class Scripted:
    """Answers (text, mean log-prob) per reading kind; records the kinds and their threads."""

    def __init__(self, n_clip: int, **answers) -> None:
        self.n_clip, self.answers = n_clip, answers
        self.calls: list[str] = []
        self.threads: dict[str, str] = {}
        self.lock = threading.Lock()

    def transcribe_scored(self, audio, stop=None):
        kind = kind_of(self.n_clip, len(audio))
        with self.lock:
            self.calls.append(kind)
            self.threads[kind] = threading.current_thread().name
        answer = self.answers[kind]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def transcribe(self, audio):  # pragma: no cover - transcribe_scored is used
        raise AssertionError("transcribe_scored should be used")


class Cancellable(Scripted):
    cancellable = True


def test_retimed_clips_are_framed_and_as_long_as_their_rate_says():
    clip = line(2.0)
    slow, fast = (retimed(clip, r) for r in (0.9, 1.2))
    assert abs(len(slow) - PAD - len(clip) / 0.9) <= 2 and abs(len(fast) - PAD - len(clip) / 1.2) <= 2
    assert not np.any(slow[: int(FRAME_LEAD_S * SR)]) and not np.any(fast[-int(FRAME_TAIL_S * SR):])
    # the same sound, only slower: its loudest sample and its energy per sample are kept
    assert np.max(np.abs(slow)) == pytest.approx(np.max(np.abs(clip)), rel=0.05)
    assert FURTHER_RATES == (0.9, 1.1, 1.2)


def test_a_line_both_framings_leave_unsure_is_read_retimed_and_the_surest_wins():
    clip = line(2.0)
    model = Scripted(len(clip), cut=("The store engine team.", -0.45), framed=("The store in team.", -0.3),
                     slower=("The storage team.", -0.04), faster=("The store team.", -0.2),
                     fastest=("The stork team.", -0.3))
    assert LineReader(model).read(clip) == "The storage team."
    assert model.calls == ["cut", "framed", "slower", "faster", "fastest"]


def test_the_framed_reading_sure_enough_reads_nothing_more():
    clip = line(2.0)
    model = Scripted(len(clip), cut=("No masks stop.", -0.33), framed=("The bus stop.", SURE_LOGPROB),
                     slower=("x", 0.0), faster=("y", 0.0), fastest=("z", 0.0))
    assert LineReader(model).read(clip) == "The bus stop."
    assert model.calls == ["cut", "framed"]


def test_words_still_win_over_nothing_and_ties_keep_the_earlier_reading():
    clip = line(2.0)
    model = Scripted(len(clip), cut=("", -0.01), framed=("Thank you.", -0.6), slower=("", -0.001),
                     faster=("Thank you all.", -0.6), fastest=("", 0.0))
    assert LineReader(model).read(clip) == "Thank you."  # a tie with a later reading: the earlier one
    assert surest([("a", -0.2), ("b", -0.2), ("", 0.0)], 2 * SR) == ("a", -0.2)
    assert surest([("", -0.01), ("uh", -0.5)], int(0.4 * SR)) == ("", -0.01)  # a blip: nothing was surer
    with pytest.raises(ValueError):
        surest([], SR)


def test_live_the_retimed_readings_start_beside_the_framed_one_on_the_helpers():
    """Live, the retimed readings start as soon as the reading as cut is unsure, on the two
    helper threads, while the framed one is still being read (they do not wait for it)."""
    clip = line(2.0)
    framed_started, retimed_started = threading.Event(), threading.Event()

    class Overlapping(Cancellable):
        def transcribe_scored(self, audio, stop=None):
            kind = kind_of(self.n_clip, len(audio))
            if kind == "framed":  # ends only once a retimed reading has started beside it
                framed_started.set()
                assert retimed_started.wait(5), "the retimed readings waited for the framed one"
            elif kind != "cut":
                with self.lock:
                    retimed_order.append(kind)
                retimed_started.set()
            return super().transcribe_scored(audio, stop)

    retimed_order: list[str] = []
    model = Overlapping(len(clip), cut=("a", -0.5), framed=("b", -0.4), slower=("c", -0.3), faster=("d", -0.05),
                        fastest=("e", -0.2))
    reader = LineReader(model, at_once=True)
    try:
        assert reader.read(clip) == "d"
    finally:
        reader.close()
    assert framed_started.is_set()
    assert retimed_order[0] == "fastest"  # the helper free first takes the shortest clip
    assert sorted(model.calls) == ["cut", "faster", "fastest", "framed", "slower"]
    assert model.threads["cut"] == threading.current_thread().name
    assert all(model.threads[k].startswith("captioner-framing") for k in ("framed", "slower", "faster", "fastest"))
    assert reader.started_at_once == 4 and reader.cancelled == 0


def test_a_failing_retimed_reading_raises_and_cancels_the_helpers():
    clip = line(2.0)
    started, stopped = threading.Event(), threading.Event()

    class Failing(Cancellable):
        def transcribe_scored(self, audio, stop=None):
            kind = kind_of(self.n_clip, len(audio))
            if kind == "faster":  # the helper's: waits for its stop
                started.set()
                assert stop is not None and stop.wait(5), "the helper's reading was never cancelled"
                stopped.set()
                raise DecodeCancelled("not needed")
            if kind == "slower":  # fails once the helper's reading runs
                assert started.wait(5)
            return super().transcribe_scored(audio, stop)

    model = Failing(len(clip), cut=("a", -0.5), framed=("b", -0.4), slower=BackendError("decoder failed"),
                    faster=("d", -0.05), fastest=("e", -0.05))
    reader = LineReader(model, at_once=True)
    try:
        with pytest.raises(BackendError, match="decoder failed"):
            reader.read(clip)
    finally:
        reader.close()
    assert stopped.is_set()


def test_live_a_retimed_reading_past_the_budget_is_cancelled_and_left_out():
    """Live, the line's final does not wait for a retimed reading past FURTHER_BUDGET_S: the
    surest of the readings that ended is kept (the file path would wait for all of them)."""
    import time

    from captioner.asr.moonshine.line_framing import FURTHER_BUDGET_S

    clip = line(2.0)
    cancelled: list[str] = []

    class Slow(Cancellable):
        def transcribe_scored(self, audio, stop=None):
            kind = kind_of(self.n_clip, len(audio))
            if kind == "slower":  # stuck until cancelled (the surest, had it ended)
                self.calls.append(kind)
                assert stop is not None and stop.wait(5), f"the {kind} reading was never cancelled"
                cancelled.append(kind)
                raise DecodeCancelled("late")
            return super().transcribe_scored(audio, stop)

    model = Slow(len(clip), cut=("a", -0.5), framed=("b", -0.4), slower=("c", -0.01), faster=("d", -0.2),
                 fastest=("e", -0.3))
    reader = LineReader(model, at_once=True)
    try:
        t0 = time.monotonic()
        assert reader.read(clip) == "d"
        took = time.monotonic() - t0
    finally:
        reader.close()
    assert FURTHER_BUDGET_S - 0.05 <= took < FURTHER_BUDGET_S + 0.5, took
    assert reader.late == 1 and cancelled == ["slower"]


def test_live_a_helper_done_with_a_sure_framed_reading_starts_no_retimed_reading_after_it():
    """The helper that ends the framed reading (sure) would take the next queued retimed reading,
    whose encoder run no stop can cut short: it checks first and skips it (and every other
    still queued); the one already running beside the framed reading is cancelled."""
    clip = line(2.0)
    first_retimed = threading.Event()
    cancelled: list[str] = []

    class SureFramed(Cancellable):
        def transcribe_scored(self, audio, stop=None):
            kind = kind_of(self.n_clip, len(audio))
            if kind == "framed":  # ends sure once the first retimed reading runs beside it
                assert first_retimed.wait(5)
            elif kind != "cut":
                with self.lock:
                    self.calls.append(kind)
                first_retimed.set()
                assert stop is not None and stop.wait(5), f"the {kind} reading was never cancelled"
                cancelled.append(kind)
                raise DecodeCancelled("not needed")
            return super().transcribe_scored(audio, stop)

    model = SureFramed(len(clip), cut=("No masks stop.", -0.33), framed=("The bus stop.", SURE_LOGPROB))
    reader = LineReader(model, at_once=True)
    try:
        assert reader.read(clip) == "The bus stop."
    finally:
        reader.close()
    assert [k for k in model.calls if k not in ("cut", "framed")] == ["fastest"]  # the other two never read
    assert cancelled == ["fastest"] and reader.late == 0  # not needed is not late


def test_live_a_framed_reading_already_sure_when_the_cut_one_ends_starts_no_retimed_reading():
    from concurrent.futures import wait as wait_futures

    clip = line(2.0)
    reader: LineReader

    class FramedFirst(Cancellable):
        def transcribe_scored(self, audio, stop=None):
            if kind_of(self.n_clip, len(audio)) == "cut":  # the framed reading ends first
                with reader._lock:
                    pending = list(reader._running)
                wait_futures(pending, timeout=5)
            return super().transcribe_scored(audio, stop)

    model = FramedFirst(len(clip), cut=("No masks stop.", -0.33), framed=("The bus stop.", -0.05),
                        slower=("x", 0.0), faster=("y", 0.0), fastest=("z", 0.0))
    reader = LineReader(model, at_once=True)
    try:
        assert reader.read(clip) == "The bus stop."
    finally:
        reader.close()
    assert sorted(model.calls) == ["cut", "framed"] and reader.started_at_once == 1


def test_live_close_while_the_cut_reading_runs_keeps_its_text_and_raises_nothing():
    clip = line(2.0)
    reader: LineReader

    class ClosedMeanwhile(Cancellable):
        def transcribe_scored(self, audio, stop=None):
            if kind_of(self.n_clip, len(audio)) == "cut":
                reader.close()  # the app unloading the model while a line is read
            return super().transcribe_scored(audio, stop)

    model = ClosedMeanwhile(len(clip), cut=("a", -0.5), framed=("b", -0.4), slower=("c", -0.3),
                            faster=("d", -0.05), fastest=("e", -0.2))
    reader = LineReader(model, at_once=True)
    assert reader.read(clip) in ("a", "b")  # the framed reading may have ended before the close
    assert not any(k in model.calls for k in ("slower", "faster", "fastest"))
