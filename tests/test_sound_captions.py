"""Sound captions through every layer below the UI (issue 49): the engine's detector per session
(a scripted fake detector stands in for YAMNet), the transcript and its four writers, the journal
and ``recover``, the caption page's operations, and ``--sounds on|off`` on ``transcribe`` and
``listen``. No model and no sleeps."""

from __future__ import annotations

import argparse
import io
import json
import threading

import numpy as np
import pytest
import soundfile as sf
import srt
import webvtt

from captioner.caption_page.hub import CaptionHub
from captioner.engine import sound_captions
from captioner.engine.live import LiveCaptioner
from captioner.engine.readahead import ReadAhead
from captioner.engine.session import StreamingSession
from captioner.engine.sound_captions import OFF, ON, SoundModels, parse_sounds
from captioner.events import Notice, SoundEvent, SpeakerFix, TextDelta, TurnBoundary
from captioner.transcript.journal_recovery import recover
from captioner.transcript.live import LiveTranscript
from captioner.transcript.model import Transcript
from captioner.transcript.writers import format_transcript
from tests.audio_fakes import FakeBackend, tone

SR = 16000
#: Two 0.96 s patches 0.48 s apart: what a sound's first caption spans (DESIGN "Sounds that are not speech").
SPAN_S = 1.44


class FakeDetector:
    """Stands in for :class:`captioner.sounds.SoundDetector`: each ``(start_s, label)`` of ``script``
    (seconds from the first sample since ``reset()``) is reported once the audio fed reaches
    ``start_s + 1.44``, as YAMNet's two patches would; ``finish()`` reports those not reached yet."""

    def __init__(self, script=((1.0, "music"),), fail_after_s: float | None = None):
        self.script = list(script)
        self.fail_after_s = fail_after_s
        self.resets = 0
        self.reset()

    def reset(self):
        self.n = 0
        self.told = set()
        self.resets += 1

    def _due(self, upto_s):
        out = []
        for start, label in self.script:
            if (start, label) not in self.told and start + SPAN_S <= upto_s + 1e-9:
                self.told.add((start, label))
                out.append(SoundEvent(start, start + SPAN_S, label, 0.9))
        return out

    def feed(self, samples):
        assert samples.dtype == np.float32 and samples.ndim == 1
        self.n += len(samples)
        if self.fail_after_s is not None and self.n / SR > self.fail_after_s:
            raise RuntimeError("the model broke")
        return self._due(self.n / SR)

    def finish(self):
        return self._due(float("inf"))


class SoundsUnavailable(RuntimeError):
    """Named like :class:`captioner.sounds.SoundsUnavailable`: its message is the status line."""


def _sounds(events, source=None):
    return [e for e in events if isinstance(e, SoundEvent) and (source is None or e.source == source)]


# -- options ------------------------------------------------------------------------------------------
def test_parse_sounds():
    assert parse_sounds("on") == ON and parse_sounds("OFF") == OFF and parse_sounds(None) == ON
    assert ON.enabled and not OFF.enabled and OFF.spec == "off"
    with pytest.raises(ValueError, match="on or off"):
        parse_sounds("loud")
    assert sound_captions.new_sound_models(OFF, 2) is None and sound_captions.new_sound_models(None, 2) is None


# -- the engine -----------------------------------------------------------------------------------------
def test_tracker_keeps_audio_while_loading_and_adds_the_stream_offset():
    gate = threading.Event()
    det = FakeDetector([(0.5, "phone ringing")])

    def load():
        gate.wait(10)
        return det

    models = SoundModels(1, load)
    tracker = models.tracker(0, "Meeting")
    tracker.reset()
    audio = tone(3.0, SR)
    first = 16000  # the tracker's first block is at stream second 1.0 (the session was already running)
    assert tracker.feed(audio[:16000], first) == []  # still loading: kept, not lost
    gate.set()
    models._ready.wait(10)
    events = tracker.feed(audio[16000:], first + 16000)
    assert events == [SoundEvent(1.5, 1.5 + SPAN_S, "phone ringing", 0.9, "Meeting")]
    assert det.n == len(audio)  # the kept second and the new audio, in order
    assert tracker.finish() == []  # told once


def test_cancel_ends_a_files_wait_for_the_sound_model_at_once():
    """A Ctrl-C while ``transcribe``'s first block waits for a slow sound model load returned only
    after FILE_LOAD_WAIT_S (30 s; found by hand, issue 49): ``cancel()`` ends the wait."""
    from captioner.commands.transcribe import _on_stop

    gate = threading.Event()
    det = FakeDetector()
    models = SoundModels(1, lambda: (gate.wait(30), det)[1], wait_s=30)
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(models.detector(0)), daemon=True)
    waiter.start()
    on_stop = _on_stop(object(), models)  # a backend without ``interrupt``: the stop still cancels
    assert on_stop is not None
    on_stop()
    waiter.join(5)  # a bound for a broken run, not a synchronisation: it returns within 0.05 s
    assert not waiter.is_alive() and got == [None]
    assert models.detector(0) is None and not models.ready  # later calls no longer wait
    gate.set()
    models._ready.wait(10)
    assert models.detector(0) is det  # a load that finishes after the stop is still used
    assert _on_stop(object(), None) is None


def test_session_emits_sounds_in_stream_time_once_their_chunk_is_decoded():
    det = FakeDetector([(1.0, "music")])
    models = SoundModels(1, lambda: det, wait_s=10)
    session = StreamingSession(FakeBackend(), "call.wav", turns=False, sounds=models.tracker(0, "call.wav"))
    audio = tone(4.0, SR)
    seen = []
    for i in range(0, len(audio), 800):  # 50 ms blocks
        for ev in session.feed(audio[i:i + 800]):
            seen.append((ev, (i + 800) / SR))
    tail = session.end()
    sounds = [(ev, at) for ev, at in seen if isinstance(ev, SoundEvent)]
    assert [ev for ev, _ in sounds] == [SoundEvent(1.0, 2.44, "music", 0.9, "call.wav")]
    assert sounds[0][1] == pytest.approx(2.5)  # with the first 0.1 s chunk decoded after 2.44 s
    assert not _sounds(tail)
    text = "".join(e.text for e, _ in seen if isinstance(e, TextDelta) and e.final)
    assert text.split()[:3] == ["w1", "w2", "w3"]  # speech is decoded as before


def test_session_restarted_counts_from_its_new_start_and_finish_flushes():
    det = FakeDetector([(0.2, "siren"), (5.0, "applause")])
    models = SoundModels(1, lambda: det, wait_s=10)
    session = StreamingSession(FakeBackend(), "x", turns=False, sounds=models.tracker(0, "x"))
    session.feed(tone(1.0, SR))
    events = session.end()  # finish(): the siren (0.2 + 1.44 > 1.0 s fed) and the applause still held
    assert [(e.label, e.start) for e in _sounds(events)] == [("siren", 0.2), ("applause", 5.0)]
    assert det.resets >= 2  # end() reset the detector for the next stream
    again = session.feed(tone(2.0, SR)) + session.end()
    assert [(e.label, e.start) for e in _sounds(again)] == [("siren", 0.2), ("applause", 5.0)]


def test_read_ahead_gives_the_sounds_where_block_by_block_feeding_does():
    def run(ahead: bool):
        models = SoundModels(1, lambda: FakeDetector([(0.3, "music"), (2.0, "dog barking")]), wait_s=10)
        session = StreamingSession(FakeBackend(), "f", turns=False, sounds=models.tracker(0, "f"))
        audio = tone(5.0, SR)
        blocks = [audio[i:i + 1600] for i in range(0, len(audio), 1600)]
        out = []
        if ahead:
            for events in ReadAhead(session, iter(blocks)):
                out.append(events)
        else:
            out = [session.feed(b) for b in blocks]
        return [[(type(e).__name__, getattr(e, "text", getattr(e, "label", ""))) for e in evs] for evs in out]

    assert run(True) == run(False)


def test_unavailable_model_is_one_notice_and_the_captions_still_come(tmp_path, monkeypatch):
    from captioner.audio.filesource import FileSource

    def broken():
        raise SoundsUnavailable("Sound captions are off: the sound model is missing. Captions go on without them.")

    monkeypatch.setattr(sound_captions, "_default_detector", broken)
    paths = []
    for name in ("a.wav", "b.wav"):
        sf.write(tmp_path / name, tone(1.0, SR), SR)
        paths.append(str(tmp_path / name))
    events = []
    live = LiveCaptioner(FakeBackend(), [FileSource(p, label, realtime=False) for p, label in zip(paths, "AB")],
                         events.append, sounds=ON)
    live.start()
    assert live.wait(30)
    notices = [e for e in events if isinstance(e, Notice) and e.code == "sounds_unavailable"]
    assert [n.message for n in notices] == [
        "Sound captions are off: the sound model is missing. Captions go on without them."]
    assert not _sounds(events)
    for label in "AB":
        assert "".join(e.text for e in events if isinstance(e, TextDelta) and e.source == label).split() == [
            f"w{i}" for i in range(1, 11)]


def test_live_sources_each_get_their_detector_with_shifted_times(tmp_path, monkeypatch):
    from captioner.audio.filesource import FileSource

    made = []

    def fake():
        made.append(FakeDetector([(0.5, "doorbell")]))
        return made[-1]

    monkeypatch.setattr(sound_captions, "_default_detector", fake)
    for name in ("a.wav", "b.wav"):
        sf.write(tmp_path / name, tone(2.5, SR), SR)
    events = []
    sources = [FileSource(str(tmp_path / n), label, realtime=False) for n, label in (("a.wav", "You"), ("b.wav", "Meeting"))]
    live = LiveCaptioner(FakeBackend(), sources, events.append, sounds=ON)
    live.start()
    assert live.wait(30)
    assert len(made) == 2  # one detector per source session
    assert sorted((e.source, e.start, e.end) for e in _sounds(events)) == [
        ("Meeting", 0.5, 0.5 + SPAN_S), ("You", 0.5, 0.5 + SPAN_S)]
    # a second run continues the stream time: its sound is shifted by the first run's length
    events.clear()
    for s, n in zip(sources, ("a.wav", "b.wav")):
        s.path = str(tmp_path / n)
    live2_events = []
    live.on_event = live2_events.append
    live.start()
    assert live.wait(30)
    starts = sorted(e.start for e in _sounds(live2_events))
    assert starts and all(s == pytest.approx(0.5 + live.time_offset) for s in starts) and live.time_offset >= 2.5


class _Scripted:
    """A system-audio source the test pushes blocks into (``_push``), with scripted stalls."""

    @staticmethod
    def make(clock):
        from captioner.audio.source import AudioSource

        class Scripted(AudioSource):
            kind = "system"
            description = "scripted monitor"
            supervised = True  # it handles its own stalls (no watchdog silence check)

            def _open(self):
                return SR, 1

            def _close(self):
                pass

        return Scripted("Meeting", clock=clock)


class _GatedBackend(FakeBackend):
    """A :class:`FakeBackend` whose model call waits for ``gate`` (a line being read for long)."""

    def __init__(self):
        super().__init__(batch_size=1, word="m")
        self.gate = threading.Event()
        self.entered = threading.Event()

    def step(self, rows):
        self.entered.set()
        assert self.gate.wait(30)
        return super().step(rows)


def _seen(events, pred):
    """A ``threading.Event`` set once ``events`` (appended to from the captioner's threads) holds a match."""
    flag = threading.Event()

    def record(ev):
        events.append(ev)
        if pred(ev):
            flag.set()

    return record, flag


def test_live_sound_is_captioned_while_the_speech_model_is_still_busy(monkeypatch):
    """Issue 49: a sound's caption comes from the capture thread as soon as its patches are in,
    not with the speech model's next row (2-4 s late live while a line was being read)."""
    from tests.audio_fakes import FakeClock

    monkeypatch.setattr(sound_captions, "_default_detector", lambda: FakeDetector([(0.2, "phone ringing")]))
    backend = _GatedBackend()
    clock = FakeClock(100.0)
    src = _Scripted.make(clock)
    events: list = []
    record, rang = _seen(events, lambda e: isinstance(e, SoundEvent))
    live = LiveCaptioner(backend, [src], record, sounds=ON)
    live._sound_models.detector(0, wait_s=10)  # the (fake) model is loaded before the audio comes
    live.start()
    x = tone(2.0, SR, 300.0, 0.5)
    for i in range(20):
        clock.advance(0.1)
        src._push(x[i * 1600:(i + 1) * 1600, None])
    assert backend.entered.wait(10)  # the speech model is stuck in its first chunk ...
    assert rang.wait(10)  # ... and the sound is captioned meanwhile
    (ring,) = _sounds(events)
    assert (ring.source, ring.label, ring.start, ring.end) == ("Meeting", "phone ringing", 0.2, 0.2 + SPAN_S)
    assert not [e for e in events if isinstance(e, TextDelta) and e.final]
    backend.gate.set()
    assert live.stop(drain=True, timeout=10)
    assert len(_sounds(events)) == 1
    assert len([e for e in events if isinstance(e, TextDelta) and e.final and e.text.strip()]) == 20


def test_live_sound_after_a_gap_keeps_its_true_time(monkeypatch):
    """A source that stalls and resumes: the detector starts afresh after the gap, and a sound
    there takes the stream time the words after the gap take (audio before + the gap)."""
    from tests.audio_fakes import FakeClock

    monkeypatch.setattr(sound_captions, "_default_detector", lambda: FakeDetector([(0.2, "doorbell")]))
    clock = FakeClock(100.0)
    src = _Scripted.make(clock)
    events: list = []
    record, resumed = _seen(events, lambda e: isinstance(e, SoundEvent) and e.start > 2.0)
    live = LiveCaptioner(FakeBackend(batch_size=1, word="m"), [src], record, sounds=ON)
    live._sound_models.detector(0, wait_s=10)
    live.start()
    x = tone(2.0, SR, 300.0, 0.5)
    for i in range(20):  # 2.0 s, then the device stalls
        clock.advance(0.1)
        src._push(x[i * 1600:(i + 1) * 1600, None])
    src._push_break(SR, 1)
    clock.advance(5.0)  # audio returns 5 s later
    for i in range(20):
        src._push(x[i * 1600:(i + 1) * 1600, None])
        clock.advance(0.1)
    assert resumed.wait(10)
    assert live.stop(drain=True, timeout=10)
    (gap,) = [e for e in events if isinstance(e, Notice) and e.code == "gap"]
    after = [e for e in events if isinstance(e, TextDelta) and e.final and e.text.strip() and e.start >= 2.0]
    first, second = _sounds(events)
    assert first.start == 0.2
    assert second.start == pytest.approx(after[0].start + 0.2, abs=1e-6)  # 2.0 s + the 4.9 s gap + 0.2 s
    assert second.start == pytest.approx(2.0 + 4.9 + 0.2, abs=0.01)


def test_a_detector_that_breaks_is_one_notice_and_speech_goes_on():
    models = SoundModels(1, lambda: FakeDetector([(5.0, "music")], fail_after_s=1.0), wait_s=10)
    session = StreamingSession(FakeBackend(), "x", turns=False, sounds=models.tracker(0, "x"))
    events = []
    audio = tone(3.0, SR)
    for i in range(0, len(audio), 1600):
        events += session.feed(audio[i:i + 1600])
    events += session.end()
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and notices[0].code == "sounds_unavailable" and "the model broke" in notices[0].message
    assert len("".join(e.text for e in events if isinstance(e, TextDelta) and e.final).split()) == 30


# -- the transcript ------------------------------------------------------------------------------------
def _meeting() -> Transcript:
    t = Transcript()
    t.add(TextDelta("Hello there", 0.5, 1.5, True, "call", speaker="Speaker 1"))
    closed = t.add(SoundEvent(1.0, 2.44, "phone ringing", 0.8, "call"))
    assert [s.text for s in closed] == ["[phone ringing]"]  # announced at once, as a closed line
    t.add(TextDelta(" how are you", 1.6, 3.0, True, "call", speaker="Speaker 1"))
    t.add(TurnBoundary(3.2, "silence", 1.0, "call"))
    t.add(SoundEvent(64.0, 65.44, "music", 0.9, "call"))
    return t


def test_a_sound_is_its_own_segment_never_merged_and_never_a_speaker():
    t = _meeting()
    segs = t.segments
    assert [(s.text, s.sound, s.speaker, s.boundary) for s in segs] == [
        ("Hello there how are you", "", "Speaker 1", "silence"),
        ("[phone ringing]", "phone ringing", "", "sound"),
        ("[music]", "music", "", "sound")]
    assert t.final_text("call") == "Hello there how are you"
    assert t.duration == pytest.approx(65.44)
    # speech decoded later may start before a sound already shown: its time is kept, not clamped
    t.add(TextDelta("late words", 63.0, 64.5, True, "call"))
    assert [s.start for s in t.segments][-2:] == [63.0, 64.0]
    t.add(SpeakerFix(0.0, 70.0, "Speaker 2", "call"))
    assert all(not s.speaker for s in t.segments if s.sound)
    assert t.add(SoundEvent(1.0, 2.0, "  ", 0.5, "call")) == []  # no word: nothing


def test_writers_put_each_sound_on_its_own_line_or_cue():
    t = _meeting()
    assert format_transcript(t, "txt") == (
        "[00:00:00] Speaker 1: Hello there how are you\n[00:00:01] [phone ringing]\n[00:01:04] [music]\n")
    cues = list(srt.parse(format_transcript(t, "srt")))
    assert [(c.content, c.start.total_seconds(), c.end.total_seconds()) for c in cues] == [
        ("Speaker 1: Hello there how are you", 0.5, 3.0),  # not cut short by the sound over it
        ("[phone ringing]", 1.0, 2.44), ("[music]", 64.0, 65.44)]
    vtt = list(webvtt.from_string(format_transcript(t, "vtt")))
    assert [(c.voice, c.text) for c in vtt] == [
        ("Speaker 1", "Hello there how are you"), (None, "[phone ringing]"), (None, "[music]")]
    doc = json.loads(format_transcript(t, "json"))
    assert doc["segments"][1] == {"source": "call", "start": 1.0, "end": 2.44, "text": "[phone ringing]",
                                  "sound": "phone ringing", "turn_end": False, "boundary": "sound"}
    assert "sound" not in doc["segments"][0] and doc["speakers"] == [{"id": "Speaker 1", "name": "Speaker 1"}]


def test_writers_label_sounds_by_source_and_never_mask_them():
    t = Transcript()
    t.add(TextDelta("hi", 0.0, 0.5, True, "You"))
    t.add(SoundEvent(0.2, 1.64, "music", 0.9, "Meeting"))
    t.add(TextDelta("hello", 0.3, 0.9, True, "Meeting"))
    assert format_transcript(t, "txt", mask=lambda s: "*" * len(s)) == (
        "[00:00:00] You: **\n[00:00:00] Meeting: [music]\n[00:00:00] Meeting: *****\n")
    assert [c.content for c in srt.parse(format_transcript(t, "srt"))] == [
        "You: hi", "Meeting: [music]", "Meeting: hello"]


def test_journal_records_sounds_and_recover_rebuilds_them(tmp_path, capsys, monkeypatch):
    live, problem = LiveTranscript.start(tmp_path / "journal", backend="fake", sources=["call"])
    assert problem is None
    for ev in (TextDelta("Hello there", 0.5, 1.5, True, "call", speaker="Speaker 1"),
               SoundEvent(1.0, 2.44, "phone ringing", 0.8, "call"),
               TextDelta(" how are you", 1.6, 3.0, True, "call", speaker="Speaker 1"),
               TurnBoundary(3.2, "silence", 1.0, "call"),
               SoundEvent(64.0, 65.44, "music", 0.9, "call")):
        assert live.add(ev) is None
    assert live.flush() is None  # on disk, not closed: a "crash"
    path = live.journal.path
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert {"type": "sound", "source": "call", "start": 1.0, "end": 2.44, "label": "phone ringing",
            "score": 0.8} in records
    again = recover(path)
    assert [(s.text, s.sound, s.start, s.end) for s in again.segments] == [
        (s.text, s.sound, s.start, s.end) for s in live.transcript.segments]
    from captioner.cli import main

    out = tmp_path / "recovered.json"
    assert main(["recover", str(path), "-o", str(out), "--keep"]) == 0
    sounds = [s for s in json.loads(out.read_text(encoding="utf-8"))["segments"] if "sound" in s]
    assert [(s["text"], s["start"]) for s in sounds] == [("[phone ringing]", 1.0), ("[music]", 64.0)]
    live.close()


# -- the caption page ------------------------------------------------------------------------------------
def test_caption_page_sends_a_sound_op_kept_for_late_viewers():
    hub = CaptionHub()
    hub.publish(TextDelta("Hello", 0.0, 0.5, True, "Meeting"))
    hub.publish(SoundEvent(0.2, 1.64, "music", 0.9, "Meeting"))
    hub.publish(SoundEvent(0.3, 1.74, "phone ringing", 0.9, "You"))
    hub.publish(TextDelta(" there", 0.5, 0.9, True, "Meeting"))
    reset, ops = hub.since(None, 0)
    data = [op.data for op in ops]
    assert [d["t"] for d in data] == ["final", "sound", "sound", "final"]
    assert {k: data[1][k] for k in ("src", "label", "text", "note")} == {
        "src": "Meeting", "label": "music", "text": "[music]", "note": True}
    assert data[2]["text"] == "[phone ringing]" and data[2]["note"] is False
    assert data[3] == {"t": "final", "src": "Meeting", "at": 5, "text": " there", "seq": 4}  # the line goes on


def test_caption_page_in_a_browser_shows_the_sound_apart_above_the_open_line():
    from captioner.caption_page.address import Bind
    from captioner.caption_page.server import CaptionServer
    from tests.browser import LINES_JS, chromium, wait_for

    browser = chromium()
    hub = CaptionHub()
    srv = CaptionServer(hub, Bind("127.0.0.1", 0)).start()
    try:
        browser.get(srv.url + "?lines=5")
        wait_for(browser, "return document.getElementById('captions').style.fontSize !== ''")
        hub.publish(TextDelta("Good morning", 0.0, 1.0, True, "Meeting"))
        hub.publish(SoundEvent(0.5, 1.94, "music", 0.9, "Meeting"))
        hub.publish(TextDelta(" everyone", 1.0, 1.5, True, "Meeting"))
        wait_for(browser, "return document.querySelectorAll('#lines .line').length === 2 && "
                          "document.querySelector('#lines .line:last-child .final').textContent.includes('everyone')")
        lines = browser.execute_script(LINES_JS)
        assert [ln["final"] for ln in lines] == ["[music]", "Good morning everyone"]  # the words being said last
        sound = "document.querySelector('#lines .line.sound')"
        assert browser.execute_script(f"return getComputedStyle({sound}.querySelector('.final')).fontStyle") == "italic"
        assert browser.execute_script(f"return {sound}.querySelector('.glyph').textContent") == "\u266a "
        assert browser.execute_script(f"return {sound}.querySelector('.glyph').getAttribute('aria-hidden')") == "true"
        assert "[music]" in browser.execute_script("return document.getElementById('lines').innerText")
    finally:
        srv.stop()
        browser.quit()


# -- the commands ----------------------------------------------------------------------------------------
@pytest.fixture
def fake_sounds(monkeypatch):
    made = []

    def fake():
        made.append(FakeDetector([(0.2, "phone ringing")]))
        return made[-1]

    monkeypatch.setattr(sound_captions, "_default_detector", fake)
    return made


def _transcribe_setup(tmp_path, monkeypatch):
    from captioner.commands import transcribe
    from captioner.engine import turn_models

    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(turn_models, "preload", lambda *a, **k: None)
    monkeypatch.setattr(transcribe, "open_backend", lambda args: FakeBackend())
    sf.write(tmp_path / "call.wav", tone(2.0, SR), SR)
    return str(tmp_path / "call.wav")


def test_transcribe_sounds_on_by_default_and_off_gives_none(tmp_path, monkeypatch, capsys, fake_sounds):
    from captioner.cli import build_parser, main

    audio = _transcribe_setup(tmp_path, monkeypatch)
    parse = build_parser().parse_args
    assert parse(["transcribe", audio]).sounds == ON and parse(["transcribe", audio, "--sounds", "off"]).sounds == OFF
    assert main(["transcribe", audio, "--format", "json", "--speakers", "off"]) == 0
    segs = json.loads(capsys.readouterr().out)["segments"]
    assert [(s["text"], s.get("sound"), s["start"]) for s in segs if "sound" in s] == [
        ("[phone ringing]", "phone ringing", 0.2)]
    assert len(fake_sounds) == 1
    assert main(["transcribe", audio, "--format", "txt", "--speakers", "off", "--sounds", "off"]) == 0
    assert "[phone ringing]" not in capsys.readouterr().out and len(fake_sounds) == 1  # no model loaded


def test_transcribe_bad_sounds_value_is_a_usage_error(tmp_path, monkeypatch, capsys):
    from captioner.cli import main

    audio = _transcribe_setup(tmp_path, monkeypatch)
    with pytest.raises(SystemExit) as exc:
        main(["transcribe", audio, "--sounds", "maybe"])
    assert exc.value.code == 2 and "on or off" in capsys.readouterr().err


def test_listen_prints_a_sound_line_and_saves_it(tmp_path, monkeypatch, fake_sounds):
    from captioner.commands import listen

    monkeypatch.setattr(listen, "_load_backend", lambda args: FakeBackend(batch_size=2))
    sf.write(tmp_path / "meeting.wav", tone(2.0, SR), SR)
    parser = argparse.ArgumentParser(prog="captioner")
    listen.add_parser(parser.add_subparsers(dest="command"))
    target = tmp_path / "out.srt"
    argv = ["listen", "--file", str(tmp_path / "meeting.wav"), "--fast", "--speakers", "off", "-o", str(target),
            "--journal-dir", str(tmp_path / "journal")]
    out, err = io.StringIO(), io.StringIO()
    assert listen.run(parser.parse_args(argv), out, err) == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    assert "[meeting.wav] (sound) [phone ringing]" in lines
    assert "[phone ringing]" in [c.content for c in srt.parse(target.read_text(encoding="utf-8"))]
    out, err = io.StringIO(), io.StringIO()
    assert listen.run(parser.parse_args(argv + ["--sounds", "off"]), out, err) == 0
    assert "(sound)" not in out.getvalue() and len(fake_sounds) == 1
