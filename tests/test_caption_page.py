"""The caption page without a browser: the hub's numbered operations, the allow-lists, the address
rules, and the server over plain HTTP (tokens, Host header, read-only, viewer bounds, port in use).
The page in a real browser: tests/test_caption_page_browser.py."""

import http.client
import io
import json
import socket
import threading
import time

import pytest

from captioner.caption_page import appearance
from captioner.caption_page.address import AddressError, Bind, check_token, host_allowed, parse_bind
from captioner.caption_page.hub import CaptionHub
from captioner.caption_page.server import CaptionPageError, CaptionServer
from captioner.events import TextDelta, TurnBoundary
from captioner.transcript.profanity import ProfanityFilter


def F(text, src="You", final=True):
    return TextDelta(text, 0.0, 1.0, final, src)


def ops(hub):
    return [op.data for op in hub.since(None, 0)[1]]


# -- hub ------------------------------------------------------------------------------------------
def test_hub_numbers_finals_partials_and_turns_like_the_overlay():
    hub = CaptionHub()
    for ev in (F(" Hello"), F(" wor", final=False), F(" world."), F(" next", final=False),
               TurnBoundary(2.0, source="You"), F("hi", "Meeting")):
        hub.publish(ev)
    got = ops(hub)
    assert [(o["t"], o.get("text")) for o in got] == [
        ("final", "Hello"), ("final", " world."), ("turn", None), ("partial", "next"), ("final", "hi")]
    # the current partials merged with the kept ops by seq (the page skips an op numbered below one it
    # applied: "next", 7, after "hi", 8, was lost for a late viewer)
    assert [o["seq"] for o in got] == [1, 3, 6, 7, 8]
    assert got[1]["at"] == 5  # appended after "Hello"


def test_reconnect_gets_exactly_what_it_missed():
    hub = CaptionHub()
    hub.publish(F("one"))
    hub.publish(F(" tw", final=False))
    reset, first = hub.since(None, 0)
    assert reset and [o.seq for o in first] == [1, 2]
    hub.publish(F(" two"))
    hub.publish(TurnBoundary(1.0, source="You"))
    hub.publish(F("three", final=False))
    reset, missed = hub.since(hub.epoch, 2)
    assert not reset and [(o.data["t"], o.data.get("text")) for o in missed] == [
        ("final", " two"), ("turn", None), ("partial", "three")]
    assert hub.since(hub.epoch, hub.last_seq) == (False, [])
    old = hub.epoch
    hub.reset()
    hub.publish(F("new run"))
    reset, ops_ = hub.since(old, 5)  # another session: clear the page, then all of it
    assert reset and [o.data["text"] for o in ops_] == ["new run"] and ops_[0].seq == 1


def test_a_cleared_partial_reaches_a_viewer_that_showed_it():
    hub = CaptionHub()
    hub.publish(F("a"))
    hub.publish(F(" b", final=False))
    hub.drain()
    seen = hub.last_seq
    hub.publish(F("", final=False))
    assert [o.data for o in hub.since(hub.epoch, seen)[1]] == [{"t": "partial", "src": "You", "text": "", "seq": 3}]


def test_mask_is_applied_across_deltas_and_fixes_what_was_sent():
    hub = CaptionHub(mask=ProfanityFilter())
    hub.publish(F("oh sh"))
    hub.publish(F("it no"))
    got = ops(hub)
    text = ""
    for o in got:
        text = text[: o["at"]] + o["text"]
    assert text == "oh s*** no"
    assert "shit" not in json.dumps(got)


def test_publish_is_cheap_and_only_queues():
    hub = CaptionHub()
    woken = []
    hub.wake = lambda: woken.append(1)
    for i in range(1000):
        hub.publish(F(f" w{i}"))
    assert len(woken) == 1 and hub.last_seq == 0  # nothing converted on the caller's thread
    hub.drain()
    assert hub.last_seq == 1000


def test_waiting_partials_merge_and_a_full_inbox_is_converted_by_the_publisher_in_order(monkeypatch):
    from captioner.caption_page import hub as hub_module

    monkeypatch.setattr(hub_module, "MAX_INBOX", 50)
    hub = CaptionHub()
    hub.wake = lambda: None  # a server thread that never gets to run
    got = []
    hub.listeners.append(lambda ops: got.extend(ops or []))
    for i in range(30):
        hub.publish(F(f" p{i}", final=False))
    assert len(hub._inbox) == 1  # only the newest waiting partial counts
    for i in range(120):
        hub.publish(F(f" w{i}"))
    assert len(hub._inbox) <= 51 and got == []  # converted by the publisher, not delivered by it
    hub.drain()
    assert [op.seq for op in got] == list(range(1, len(got) + 1))
    text = "".join(op.data.get("text", "") for op in got if op.data["t"] == "final")
    assert text.split() == [f"w{i}" for i in range(120)]


# -- appearance, address ------------------------------------------------------------------------
def test_appearance_allow_lists():
    s = appearance.parse({"size": "48", "color": "ff0", "bg": "Navy", "opacity": "0", "lines": "2",
                          "align": "left", "font": "serif"})
    assert s == {"size": 48, "color": "#ffff00", "bg": "#000080", "opacity": 0, "lines": 2, "align": "left",
                 "font": "serif", "labels": "auto"}
    for bad in ({"color": "red;background:url(x)"}, {"color": "</style><script>alert(1)</script>"},
                {"size": "40px"}, {"size": "1e3"}, {"size": "9"}, {"font": "Arial"}, {"align": "justify"},
                {"opacity": "101"}, {"onload": "x"}, {"bg": "expression(alert(1))"}):
        with pytest.raises(appearance.AppearanceError) as err:
            appearance.parse(bad)
        assert "<" not in str(err.value) and "url(" not in str(err.value)


def test_bind_token_and_host_rules():
    assert parse_bind(None) == Bind() and not Bind().network
    assert parse_bind("8080") == Bind("127.0.0.1", 8080)
    assert parse_bind("0.0.0.0:9000") == Bind("0.0.0.0", 9000) and Bind("0.0.0.0", 9000).network
    assert parse_bind("[::1]:9001") == Bind("::1", 9001)
    for bad in ("host.example:80", "1.2.3.4:x", "1.2.3.4:70000"):
        with pytest.raises(AddressError):
            parse_bind(bad)
    assert len(check_token(None)) >= 20 and check_token(None) != check_token(None)
    with pytest.raises(AddressError):
        check_token("short")
    assert host_allowed("127.0.0.1:5", False) and host_allowed("localhost:5", False)
    assert not host_allowed("evil.example:5", False) and not host_allowed("192.168.1.4:5", False)
    assert host_allowed("192.168.1.4:5", True) and host_allowed("[fe80::1]:5", True)
    assert not host_allowed("evil.example", True) and not host_allowed(None, True)
    assert host_allowed(socket.gethostname() + ".local:5", True)


# -- server over HTTP ----------------------------------------------------------------------------
@pytest.fixture
def serve():
    servers = []

    def start(hub=None, bind=Bind("127.0.0.1", 0), **kw):
        srv = CaptionServer(hub or CaptionHub(), bind, **kw).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        assert srv.stop(2.0)


def get(port, path, host=None, method="GET", read=True):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{port}")
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read() if read else b""
    return resp, body


def test_loopback_page_and_security_headers(serve):
    srv = serve()
    resp, body = get(srv.port, "/?size=30&color=yellow")
    assert resp.status == 200 and b"caption-page.js" in body
    assert resp.getheader("Access-Control-Allow-Origin") is None
    assert resp.getheader("X-Content-Type-Options") == "nosniff"
    assert "script-src 'self'" in resp.getheader("Content-Security-Policy")
    resp, body = get(srv.port, "/?color=red%3Bbackground%3Aurl(x)")
    assert resp.status == 400 and resp.getheader("Content-Type").startswith("text/plain") and b"url(" not in body
    resp, body = get(srv.port, "/style/captions?size=30")
    assert resp.status == 200 and json.loads(body)["size"] == 30
    assert get(srv.port, "/", host="attacker.example:80")[0].status == 403  # DNS rebinding
    assert get(srv.port, "/events", method="POST")[0].status == 405  # read-only
    assert get(srv.port, "/transcript")[0].status == 200


def test_network_mode_needs_the_token(serve):
    srv = serve(bind=Bind("0.0.0.0", 0))
    assert srv.token and srv.url.endswith(f"/{srv.token}/")
    assert get(srv.port, f"/{srv.token}/")[0].status == 200
    assert get(srv.port, f"/{srv.token}/events", read=False)[0].status == 200
    assert get(srv.port, "/")[0].status == 403
    assert get(srv.port, "/events")[0].status == 403
    assert get(srv.port, "/" + "x" * len(srv.token) + "/")[0].status == 403
    assert get(srv.port, f"/{srv.token}/", host="rebind.attacker.example")[0].status == 403
    pinned = serve(bind=Bind("0.0.0.0", 0), token="my-fixed-token")
    assert get(pinned.port, "/my-fixed-token/transcript")[0].status == 200


def test_port_in_use_is_reported_with_a_free_one(serve):
    srv = serve()
    with pytest.raises(CaptionPageError) as err:
        CaptionServer(CaptionHub(), Bind("127.0.0.1", srv.port)).start()
    assert "another program uses that port" in str(err.value) and err.value.free_port
    assert f"127.0.0.1:{err.value.free_port}" in str(err.value)


class Reader:
    """A viewer that reads its event stream on a thread (``stalled=True``: connects, never reads)."""

    def __init__(self, port, path="/events", stalled=False):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        self.events = []
        if not stalled:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.sock.makefile("rb"):
                if line.startswith(b"data: "):
                    self.events.append(json.loads(line[6:]))
        except (OSError, ValueError):
            pass

    def wait(self, pred, deadline=10.0):
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if pred(self.events):
                return True
            time.sleep(0.01)
        return False

    def close(self):
        self.sock.close()


def until(pred, deadline=10.0):
    end = time.monotonic() + deadline
    while not pred() and time.monotonic() < end:
        time.sleep(0.01)
    return pred()


def test_max_viewers_and_a_stalled_viewer_is_dropped(serve):
    hub = CaptionHub()
    counts = []
    srv = serve(hub, max_viewers=2, queue_limit=8, on_viewers=counts.append)
    reader, stalled = Reader(srv.port), Reader(srv.port, stalled=True)
    assert until(lambda: srv.viewers == 2)
    assert get(srv.port, "/events")[0].status == 503  # a third one
    big = " " + "x" * 4000
    for _ in range(2000):  # more than the stalled one's socket buffers and queue hold
        hub.publish(F(big))
        if srv.dropped:
            break
        time.sleep(0.001)
    assert until(lambda: srv.dropped == 1 and srv.viewers == 1)  # the reader is still served
    hub.publish(F(" end"))
    assert reader.wait(lambda ev: any(e.get("text") == " end" for e in ev))
    seqs = [e["seq"] for e in reader.events if "seq" in e]
    assert seqs == list(range(1, len(seqs) + 1))  # the reader lost nothing
    assert counts[:2] == [1, 2] and counts[-1] == 1
    reader.close(), stalled.close()


def test_listen_serves_the_page(tmp_path, monkeypatch):
    import numpy as np
    import soundfile as sf

    from captioner.commands import listen
    from tests.audio_fakes import FakeBackend, tone
    from tests.test_listen_cli import _parse

    monkeypatch.setattr(listen, "_load_backend", lambda args: FakeBackend(batch_size=1))
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.concatenate([tone(3.0, 16000)]), 16000)
    err = io.StringIO()
    args = _parse(["listen", "--file", str(wav), "--serve-captions", "127.0.0.1:0", "--journal-dir",
                   str(tmp_path)])
    done = []
    t = threading.Thread(target=lambda: done.append(listen.run(args, io.StringIO(), err)))
    t.start()
    deadline = time.monotonic() + 20
    while "caption page" not in err.getvalue() and time.monotonic() < deadline and t.is_alive():
        time.sleep(0.02)
    line = next(ln for ln in err.getvalue().splitlines() if ln.startswith("caption page"))
    assert "this computer only" in line
    port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
    s = Reader(port)
    assert s.wait(lambda ev: any(e.get("text", "").strip() == "w1" for e in ev), 15)
    assert s.events[0]["t"] == "reset"
    t.join(20)
    assert done == [0]
    with pytest.raises(OSError):  # the page stopped with the run
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    s.close()


def test_listen_port_in_use_and_bad_options(tmp_path, serve, monkeypatch):
    from captioner.commands import listen
    from tests.audio_fakes import FakeBackend
    from tests.test_listen_cli import _run

    monkeypatch.setattr(listen, "_load_backend", lambda args: FakeBackend(batch_size=1))
    busy = serve()
    wav = tmp_path / "a.wav"
    import numpy as np
    import soundfile as sf

    sf.write(wav, np.zeros(1600, np.float32), 16000)
    code, _, err = _run(["listen", "--file", str(wav), "--serve-captions", str(busy.port),
                         "--journal-dir", str(tmp_path)])
    assert code == 1 and "another program uses that port" in err and "is free: use it" in err
    code, _, err = _run(["listen", "--file", str(wav), "--caption-token", "abcdefgh12"])
    assert code == 2 and "--caption-token needs --serve-captions" in err
    code, _, err = _run(["listen", "--file", str(wav), "--serve-captions", "example.com:80"])
    assert code == 2 and "IP address" in err


def test_the_page_files_ship_in_the_package():
    import fnmatch
    import tomllib
    from pathlib import Path

    from captioner.caption_page.server import FILES, PAGES, STATIC, resource

    root = Path(__file__).resolve().parents[1]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "captioner.resources"]
    names = [p[0] for p in PAGES.values()] + [FILES.get(n, n) for n in STATIC]
    for name in names:
        assert resource(name) and any(fnmatch.fnmatch(name, pat) for pat in patterns), name
    assert "captioner.caption_page" in tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"]
