"""Remote backend against the scripted loopback server (tests/remote_server.py).

Each test scripts what the server says or breaks, runs a real StreamingSession through the
remote backend and checks what the user gets: text, times, turns, notices, and (from the
server's own counts) that no audio was lost or sent twice.
"""

import threading
import time

import numpy as np
import pytest

pytest.importorskip("websockets")

from captioner.asr import BackendError, load_backend, model_problem  # noqa: E402
from captioner.asr.remote import protocol as P  # noqa: E402
from captioner.engine.session import StreamingSession  # noqa: E402
from captioner.events import VoiceActivity, Notice, TextDelta, TurnBoundary, VadProbabilities  # noqa: E402
from tests.remote_server import STEP, Script, ScriptedServer, word_audio  # noqa: E402

# the stall timeout and the end rule keep their defaults: their values are what the tests check
FAST = dict(busy_timeout_s=1.0, greet_timeout_s=2.0, connect_timeout_s=2.0,
            backoff_s=0.05, backoff_max_s=0.2, reconnect_give_up_s=5.0)


def _backend(url, **kw):
    opts = dict(FAST)
    opts.update(kw)
    return load_backend("remote", url, delay_ms=opts.pop("delay_ms", 480), language=opts.pop("language", "en"),
                        **opts)


def _run(backend, audio, label="f"):
    session = StreamingSession(backend, label)
    events = []
    for i in range(0, len(audio), STEP):
        events += session.feed(audio[i : i + STEP])
    events += session.end()
    return events


def _text(events):
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def _codes(events):
    return [e.code for e in events if isinstance(e, Notice)]


def _pcm_round_trip(audio):
    return np.frombuffer(P.to_pcm16(audio), dtype="<i2").astype(np.float32) / 32768.0


def test_normal_session_text_turns_and_times():
    vad = {k: [0.9, 0.9, 0.9, 0.9] for k in (12, 13, 14)}
    script = Script(text={5: " Hello", 6: " world", 20: "."}, vad=vad)
    audio = (0.01 * np.random.default_rng(0).standard_normal(16000 * 2)).astype(np.float32)
    with ScriptedServer(script) as srv:
        events = _run(_backend(srv.url), audio)
        conn = srv.connections[0]
        assert conn.updates == [{"type": "session.update", "model": "audio8-asr-infinite", "language": "en",
                                 "target_delay_ms": 480}]
        assert conn.commits == [False, True] and conn.done_sent == 1
        np.testing.assert_array_equal(conn.received, _pcm_round_trip(audio))  # every sample once, in order
    # the server's VAD heads drive the overlay's indicator, as local Audio8's do
    activity = [e for e in events if isinstance(e, VoiceActivity)]
    assert ("turn_over", pytest.approx(1.04)) in [(a.state, a.time) for a in activity]
    events = [e for e in events if not isinstance(e, VoiceActivity)]
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert [(d.text, d.start, d.end) for d in deltas] == [
        (" Hello", pytest.approx(0.40), pytest.approx(0.48)),
        (" world", pytest.approx(0.48), pytest.approx(0.56)),
        (".", pytest.approx(1.60), pytest.approx(1.68)),
    ]
    assert all(d.source == "f" and d.final for d in deltas)
    turns = [e for e in events if isinstance(e, TurnBoundary)]
    assert [(t.kind, round(t.time, 2)) for t in turns] == [("semantic_vad", 1.04), ("end_of_stream", 2.0)]
    vads = [e for e in events if isinstance(e, VadProbabilities)]
    assert len(vads) == 25 + 11  # N steps give N + d + 11 deltas; the d about the left pad carry no VAD
    assert vads[0].horizons == (0.5, 1.0, 2.0, 3.0)
    assert max(v.time for v in vads) == pytest.approx(2.0)  # padding steps never run past the audio
    # the VAD of a step comes right before its text (same step time), the turn right after it
    for d in deltas:
        before = events[events.index(d) - 1]
        assert isinstance(before, VadProbabilities) and before.time == pytest.approx(d.end)
    turn = turns[0]
    before = events[events.index(turn) - 1]
    assert isinstance(before, VadProbabilities) and before.time == pytest.approx(turn.time)


def test_stats_carry_server_metrics():
    with ScriptedServer(Script(text={1: " a"})) as srv:
        backend = _backend(srv.url)
        session = StreamingSession(backend, "f")
        session.feed(np.zeros(STEP * 20, np.float32))
        assert srv.wait_for(lambda: srv.connections[0].steps >= 10)
        session.feed(np.zeros(STEP, np.float32))  # drain what came back
        st = session.stats()
        assert st.step_ms == pytest.approx(21.5) and st.rtf == pytest.approx(0.26)
        assert st.gpu_memory_used_bytes == 12_900_000_000 and st.gpu_memory_total_bytes == 24_000_000_000
        assert st.client_latency_ms > 0
        session.end()


def test_delta_splitting_a_character_and_cjk():
    script = Script(text={2: "\ud83d", 3: "\ude00 ok", 4: "你", 5: "好", 7: "\ud83d"})  # 7: a half that never completes
    with ScriptedServer(script) as srv:
        events = _run(_backend(srv.url), np.zeros(STEP * 12, np.float32))
    assert _text(events) == "😀 ok你好\ufffd"
    emoji = next(e for e in events if isinstance(e, TextDelta) and "😀" in e.text)
    assert emoji.start == pytest.approx(0.16) and emoji.end == pytest.approx(0.32)  # spans both steps


def test_empty_deltas_keep_the_clock():
    with ScriptedServer(Script(text={30: " late"})) as srv:
        events = _run(_backend(srv.url), np.zeros(STEP * 40, np.float32))
    (d,) = [e for e in events if isinstance(e, TextDelta)]
    assert d.text == " late" and d.start == pytest.approx(2.40) and d.end == pytest.approx(2.48)


def test_text_after_the_audio_ends_is_timed_at_the_end():
    # delay + 1 + 10 padding steps: the last words come back after the audio; stop still delivers them
    with ScriptedServer(Script(text={12: " last"})) as srv:
        events = _run(_backend(srv.url), np.zeros(STEP * 8, np.float32))
    (d,) = [e for e in events if isinstance(e, TextDelta)]
    assert d.text == " last" and d.end == pytest.approx(0.64)


@pytest.mark.parametrize("code", ["invalid_event", "model_not_found", "model_not_validated"])
def test_fatal_error_codes_become_clear_messages(code):
    with ScriptedServer(Script(text={1: " kept"}, error_at_step=(4, code))) as srv:
        backend = _backend(srv.url)
        session = StreamingSession(backend, "f")
        events = []
        with pytest.raises(BackendError) as err:
            for _ in range(200):  # each step waits (<= 60 ms) for its answer, so the error arrives in time
                events += session.feed(np.zeros(STEP, np.float32))
    assert P.ERROR_MESSAGES[code] in str(err.value) and srv.url in str(err.value) and code in str(err.value)
    assert _text(events) == " kept"  # the text before the error was delivered first


@pytest.mark.parametrize("code", ["quota_exceeded", "invalid_json", "invalid_audio", "unknown_event"])
def test_an_unknown_or_single_error_is_reported_and_skipped(code):
    # errors never close the socket (DESIGN section 2): one of them must not end the run
    with ScriptedServer(Script(text={1: " before", 12: " after"}, errors={4: code})) as srv:
        events = _run(_backend(srv.url), np.zeros(STEP * 20, np.float32))
        conns = len(srv.connections)
    assert _text(events) == " before after" and conns == 1  # no reconnect, nothing lost
    (notice,) = [e for e in events if isinstance(e, Notice) and e.code == "remote_server_error"]
    assert code in notice.message and "skipped" in notice.message and notice.severity == "warning"


def test_a_repeated_error_ends_the_run_clearly():
    with ScriptedServer(Script(text={1: " kept"}, errors={4: "invalid_audio", 5: "invalid_audio",
                                                           6: "invalid_audio"})) as srv:
        with pytest.raises(BackendError, match=r"refused an audio packet.*3 times"):
            _run(_backend(srv.url), np.zeros(STEP * 30, np.float32))


@pytest.mark.parametrize("frame", ["{not json", '{"no": "type"}', "[1, 2]"])
def test_a_single_bad_frame_is_reported_and_skipped(frame):
    script = Script(words_from_audio=True, bad_frame_at_step={6: frame})
    events, audio, received, conns = _word_run(script, WORDS)
    assert conns == 1 and _text(events) == "".join(f" w{k}" for k in WORDS if k)
    (notice,) = [e for e in events if isinstance(e, Notice) and e.code == "remote_bad_frame"]
    assert "skipped" in notice.message
    np.testing.assert_array_equal(received, _pcm_round_trip(audio))  # every sample once


def test_repeated_bad_frames_reconnect_and_keep_every_word():
    script = Script(words_from_audio=True, bad_frame_at_step={6: "x", 7: "y", 8: "z"})
    events, audio, received, conns = _word_run(script, WORDS)
    assert conns == 2 and _text(events) == "".join(f" w{k}" for k in WORDS if k)
    assert "3 bad frames" in next(e.message for e in events if isinstance(e, Notice)
                                  and e.code == "remote_reconnecting")


def test_wrong_model_name_is_refused_clearly():
    with ScriptedServer(Script()) as srv:
        backend = _backend(srv.url, model_name="whisper")
        with pytest.raises(BackendError, match="does not serve this model name"):
            _run(backend, np.zeros(STEP * 30, np.float32))


def _word_run(script, words, **kw):
    audio = word_audio(words)
    with ScriptedServer(script) as srv:
        events = _run(_backend(srv.url, **kw), audio)
        received = srv.total_received()
        conns = len(srv.connections)
        _word_run.last = [c.received for c in srv.connections]
        _word_run.transcribed = [c.transcribed for c in srv.connections]
    return events, audio, received, conns


WORDS = [0, 1, 2, 3, 0, 4, 5, 0, 6, 7, 8, 0, 9, 10, 11, 12, 0, 13, 14, 0] * 2


@pytest.mark.parametrize("fault", [dict(close_after_steps=(15, 1011)), dict(drop_after_steps=15),
                                   dict(binary_after_steps=15)], ids=["close-1011", "dropped", "binary-frame"])
def test_reconnect_keeps_every_word_and_transcribes_audio_exactly_once(fault):
    script = Script(words_from_audio=True, **fault)
    events, audio, received, conns = _word_run(script, WORDS)
    assert conns == 2
    expected = "".join(f" w{k}" for k in WORDS if k)
    assert _text(events) == expected  # every word once: none lost in the delay, none repeated
    # the server had sent tokens for steps 0-14 (it held 7 more steps for the 480 ms delay):
    # the new session gets the audio from the delay + look-ahead (7 steps) before step 15 on,
    # and what it says again about steps 8-14 is dropped
    first, second = _word_run.last
    pcm = _pcm_round_trip(audio)
    np.testing.assert_array_equal(first[: 15 * STEP], pcm[: 15 * STEP])
    np.testing.assert_array_equal(second, pcm[8 * STEP :])
    assert _word_run.transcribed[0] == [list(range(15))]
    codes = _codes(events)
    assert "remote_reconnecting" in codes and "remote_reconnected" in codes
    (gap,) = [e for e in events if isinstance(e, TurnBoundary) and e.kind == "connection_gap"]
    assert gap.time == pytest.approx(15 * STEP / 16000)
    times = [(e.start, e.end) for e in events if isinstance(e, TextDelta)]
    word_steps = [i for i, k in enumerate(WORDS) if k]
    assert [round(e, 2) for _, e in times] == [round((i + 1) * 0.08, 2) for i in word_steps]  # times survive


def test_a_binary_frame_from_the_server_is_skipped_and_keeps_every_word():
    script = Script(words_from_audio=True, binary_frame_at_step=15)
    events, audio, received, conns = _word_run(script, WORDS)
    assert conns == 1 and _text(events) == "".join(f" w{k}" for k in WORDS if k)
    assert "binary frame" in next(e.message for e in events if isinstance(e, Notice) and e.code == "remote_bad_frame")


def test_processing_error_restarts_the_generation():
    script = Script(words_from_audio=True, processing_error_at_step=10)
    events, audio, received, conns = _word_run(script, WORDS)
    assert conns == 2
    assert _text(events) == "".join(f" w{k}" for k in WORDS if k)
    # audio from the failed step on was never confirmed: the new session gets it, and the
    # delay + look-ahead (7 steps) before it
    first, second = _word_run.last
    np.testing.assert_array_equal(second, _pcm_round_trip(audio)[3 * STEP :])
    assert "remote_reconnected" in _codes(events)


def test_never_answering_server_is_reported_busy_within_seconds():
    with ScriptedServer(Script(silent=True)) as srv:
        backend = _backend(srv.url, busy_timeout_s=1.0)
        session = StreamingSession(backend, "f")
        t0 = time.monotonic()
        with pytest.raises(BackendError, match="busy serving another stream"):
            while time.monotonic() - t0 < 10:  # each unanswered step waits 60 ms: about real time
                session.feed(np.zeros(STEP, np.float32))
        assert time.monotonic() - t0 < 4


def test_connection_refused_fails_fast_naming_the_url():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    url = f"ws://127.0.0.1:{port}/v1/realtime"
    backend = _backend(url)
    t0 = time.monotonic()
    with pytest.raises(BackendError, match="connection refused") as err:
        StreamingSession(backend, "f").feed(np.zeros(STEP, np.float32))
    assert url in str(err.value) and time.monotonic() - t0 < 2


def test_unknown_host_fails_naming_the_url():
    backend = _backend("ws://no-such-host.invalid:18191/v1/realtime", connect_timeout_s=2.0)
    with pytest.raises(BackendError, match="no-such-host.invalid"):
        StreamingSession(backend, "f").feed(np.zeros(STEP, np.float32))


def test_slow_reader_applies_backpressure_without_unbounded_buffering():
    script = Script(text={1: " a"}, read_pause_s=1.5)
    with ScriptedServer(script, rcvbuf=4096) as srv:
        backend = _backend(srv.url, max_pending_s=0.5, stall_timeout_s=5.0)
        session = StreamingSession(backend, "f")
        session.feed(np.zeros(STEP, np.float32))
        stream = session.state
        peak = 0
        t0 = time.monotonic()
        pushed = 0
        while time.monotonic() - t0 < 1.0:  # the server reads nothing for 1.5 s
            session.feed(np.zeros(STEP, np.float32))
            pushed += 1
            peak = max(peak, stream._buffer.out_samples)
        assert peak <= 0.5 * 16000 + STEP  # the client queue stays bounded
        assert pushed * STEP < 16000 * 60  # ... because the pushes were held back, not buffered
        events = session.end()
        assert srv.total_received().size == (pushed + 1) * STEP
    assert _text(events) == " a"


def test_silent_source_keepalive_silence_does_not_shift_times():
    with ScriptedServer(Script(words_from_audio=True)) as srv:
        backend = _backend(srv.url, keepalive_after_s=0.1)
        session = StreamingSession(backend, "f")
        events = session.feed(word_audio([0, 1]))
        assert srv.wait_for(lambda: srv.total_received().size >= STEP * 8)  # the client kept the stream alive
        events += session.feed(word_audio([0, 2]))
        events += session.end()
        assert srv.total_received().size > 4 * STEP
    words = [(e.text, round(e.end, 2)) for e in events if isinstance(e, TextDelta)]
    assert words == [(" w1", 0.16), (" w2", 0.32)]  # stream time, not counting the keep-alive silence


def test_outage_audio_is_sent_after_reconnecting_or_reported_dropped():
    script = Script(words_from_audio=True, drop_after_steps=5)
    with ScriptedServer(script) as srv:
        backend = _backend(srv.url, outage_buffer_s=1.0, reconnect_give_up_s=10.0)
        gate = threading.Event()
        srv.refuse = lambda: len(srv.connections) >= 1 and not gate.is_set()
        session = StreamingSession(backend, "f")
        # 13 steps: the server answers tokens 0-4 (w1-w5), then drops; steps 5-12 (0.64 s) were
        # never transcribed and wait for the next session
        events = session.feed(word_audio([1, 2, 3, 4, 5] + [0] * 8))
        stream = session.state
        with stream._cond:
            assert stream._cond.wait_for(lambda: not stream._connected, timeout=10)
        events += session.feed(word_audio([6] * 20))  # 1.6 s while the server is away: 0.32 s fit the 1 s
        gate.set()
        events += session.end()
        dropped = backend.state_stats(stream)["dropped_s"]
    codes = _codes(events)
    assert "remote_dropped" in codes and "remote_reconnected" in codes
    msg = next(e.message for e in events if isinstance(e, Notice) and e.code == "remote_reconnected")
    assert "1.3 s of audio captured during the outage did not fit the buffer and were dropped" in msg
    assert dropped == pytest.approx(16 * STEP / 16000)
    assert _text(events) == " w1 w2 w3 w4 w5" + " w6" * 4


def test_token_is_sent_and_a_wrong_one_is_refused():
    with ScriptedServer(Script(text={1: " ok"}), token="s3cret") as srv:
        assert _text(_run(_backend(srv.url, token="s3cret"), np.zeros(STEP * 4, np.float32))) == " ok"
        backend = _backend(srv.url, token="wrong")
        assert "wrong" not in backend.describe() and "wrong" not in repr(backend.config)
        with pytest.raises(BackendError, match="refused the key"):
            _run(backend, np.zeros(STEP * 4, np.float32))


def test_more_sources_than_servers_is_said_clearly():
    with ScriptedServer(Script()) as srv:
        backend = _backend(srv.url)
        a = StreamingSession(backend, "You")
        a.feed(np.zeros(STEP, np.float32))
        with pytest.raises(BackendError, match="2 sources need 2 caption servers"):
            StreamingSession(backend, "Meeting").feed(np.zeros(STEP, np.float32))
        a.end()


def test_two_sources_two_servers():
    with ScriptedServer(Script(text={1: " one"})) as s1, ScriptedServer(Script(text={1: " two"})) as s2:
        backend = _backend(f"{s1.url},{s2.url}")
        a, b = StreamingSession(backend, "You"), StreamingSession(backend, "Meeting")
        events = a.feed(np.zeros(STEP * 3, np.float32)) + b.feed(np.zeros(STEP * 3, np.float32))
        events += a.end() + b.end()
    by = {(e.source, e.text) for e in events if isinstance(e, TextDelta)}
    assert by == {("You", " one"), ("Meeting", " two")}


@pytest.mark.parametrize("url, needle", [
    ("http://h:18191/v1/realtime", "did you mean ws://h:18191/v1/realtime"),
    ("ftp://h/x", "must start with ws:// or wss://"),
    ("ws://", "has no host"),
    ("ws://user:pw@h/v1/realtime", "must not contain a user name or password"),
    ("ws://h:99999/v1/realtime", "invalid server URL"),
    ("", "needs a server URL"),
])
def test_url_validation(url, needle):
    assert needle in (model_problem("remote", url) or "")


def test_url_defaults_path_and_keeps_query():
    assert P.parse_server_url("ws://h:18191").url == "ws://h:18191/v1/realtime"
    assert P.parse_server_url("wss://h:8443/v1/realtime?instance=2").url == "wss://h:8443/v1/realtime?instance=2"
    assert model_problem("remote", "ws://a:1/v1/realtime, ws://b:2/v1/realtime") is None


def test_delay_and_clock_are_checked():
    with pytest.raises(BackendError, match="80 ms clock only"):
        load_backend("remote", "ws://h/v1/realtime", clock_ms=120, delay_ms=480)
    with pytest.raises(BackendError, match="not served"):
        load_backend("remote", "ws://h/v1/realtime", delay_ms=1280 + 80 * 5)


def test_hotwords_and_model_name_go_in_the_session_update():
    with ScriptedServer(Script()) as srv:
        _run(_backend(srv.url, hotwords=("Kubernetes", " "), hotword_boost=3.0, language="zh", delay_ms=320),
             np.zeros(STEP * 2, np.float32))
        (update,) = srv.connections[0].updates
    assert update == {"type": "session.update", "model": "audio8-asr-infinite", "language": "zh",
                      "target_delay_ms": 320, "hotwords": ["Kubernetes"], "hotword_boost": 3.0}


def test_redirects_are_not_followed():
    with ScriptedServer(Script()) as other, ScriptedServer(Script()) as srv:
        srv.redirect_to = other.url
        with pytest.raises(BackendError, match="redirects to") as err:
            _run(_backend(srv.url), np.zeros(STEP, np.float32))
        assert other.url in str(err.value) and not other.connections  # no audio went there


def test_wrong_path_says_404():
    with ScriptedServer(Script()) as srv:
        with pytest.raises(BackendError, match="HTTP 404"):
            _run(_backend(srv.url.replace("/v1/realtime", "/v2/x")), np.zeros(STEP, np.float32))


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a certificate")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(d / "server.key"),
                    "-out", str(d / "server.crt")], check=True, capture_output=True)
    return d / "server.crt", d / "server.key"


def test_wss_with_the_servers_self_signed_certificate(self_signed):
    import ssl

    crt, key = self_signed
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    with ScriptedServer(Script(text={1: " secure"}), ssl_context=ctx) as srv:
        assert srv.url.startswith("wss://")
        assert _text(_run(_backend(srv.url, ca_file=str(crt)), np.zeros(STEP * 3, np.float32))) == " secure"
        with pytest.raises(BackendError, match="TLS certificate is not trusted.*--ca-file"):
            _run(_backend(srv.url), np.zeros(STEP, np.float32))


def test_audio_and_key_never_reach_the_logs(caplog):
    import logging

    caplog.set_level(logging.DEBUG)  # even with everything at DEBUG
    with ScriptedServer(Script(text={1: " ok"}, close_after_steps=(3, 1011)), token="s3cret-key") as srv:
        _run(_backend(srv.url, token="s3cret-key"), np.full(STEP * 12, 0.25, np.float32))
    pcm_b64 = P.append(P.to_pcm16(np.full(STEP, 0.25, np.float32)))[40:80]
    client_logs = [r for r in caplog.records if not r.name.startswith("websockets.server")]
    assert client_logs  # the reconnect was logged ...
    text = "\n".join(r.getMessage() for r in client_logs)
    assert "s3cret-key" not in text and pcm_b64 not in text  # ... without the key or any audio


def test_an_abandoned_stream_frees_the_server():
    with ScriptedServer(Script()) as srv:
        backend = _backend(srv.url, keepalive_after_s=0.05, abandon_after_s=0.5)
        session = StreamingSession(backend, "f")
        session.feed(np.zeros(STEP * 3, np.float32))  # ... and never end()
        assert srv.wait_for(lambda: srv.connections[0].closed, timeout=10)
        assert srv.connections[0].commits == [False, True] and srv.connections[0].done_sent == 1
        with pytest.raises(BackendError, match="closed after 0.5 s without audio"):
            session.feed(np.zeros(STEP, np.float32))


def test_a_server_that_always_fails_is_given_up_on():
    script = Script(processing_error_at_step=0, processing_error_always=True)
    with ScriptedServer(script) as srv:
        with pytest.raises(BackendError, match="failed 4 sessions in a row") as err:
            _run(_backend(srv.url), np.zeros(STEP * 200, np.float32))
        assert len(srv.connections) == 4
    assert "CUDA error" in str(err.value)


@pytest.mark.parametrize("horizon, threshold, turns", [(1.0, 0.5, 0), (2.0, 0.5, 1), (2.0, 0.95, 0)])
def test_vad_horizon_and_threshold_decide_turns_like_local_audio8(horizon, threshold, turns):
    vad = {k: [0.1, 0.2, 0.9, 0.9] for k in (10, 11, 12)}  # only the 2 s and 3 s horizons say "end of turn"
    with ScriptedServer(Script(text={3: " hi"}, vad=vad)) as srv:
        events = _run(_backend(srv.url, vad_horizon_s=horizon, vad_threshold=threshold),
                      np.zeros(STEP * 20, np.float32))
    fired = [e for e in events if isinstance(e, TurnBoundary) and e.kind == "semantic_vad"]
    assert len(fired) == turns  # hysteresis: one boundary for the three high steps
    if turns:
        assert fired[0].time == pytest.approx(0.88) and fired[0].probability == pytest.approx(0.9)


def test_a_drop_during_the_final_flush_still_delivers_the_last_words():
    words = list(range(1, 11))  # 10 steps: most tokens come after final (the delay + padding)
    events, audio, received, conns = _word_run(Script(words_from_audio=True, close_after_steps=(6, 1011)), words)
    assert conns == 2 and _text(events) == "".join(f" w{k}" for k in words)
    first, second = _word_run.last
    np.testing.assert_array_equal(second, _pcm_round_trip(audio))  # 7 steps before step 6: from the start


def test_a_server_gone_for_good_is_given_up_on_with_the_text_kept():
    with ScriptedServer(Script(words_from_audio=True, close_after_steps=(3, 1011))) as srv:
        srv.refuse = lambda: len(srv.connections) >= 1
        backend = _backend(srv.url, reconnect_give_up_s=0.5)
        session = StreamingSession(backend, "f")
        events = session.feed(word_audio([1, 2, 3] + [0] * 8))
        events += session.end()
    assert _text(events) == " w1 w2 w3"
    (err,) = [e for e in events if isinstance(e, Notice) and e.code == "remote_error"]
    assert err.severity == "error" and "gave up after" in err.message and "HTTP 503" in err.message
    assert "text received so far is kept" in err.message
