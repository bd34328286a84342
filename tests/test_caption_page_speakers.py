"""Who is speaking on the caption page (issue 38): the hub's ``spk`` on finals and a new line at a
change of voice, ``name`` ops from :meth:`CaptionHub.rename_speaker` (kept over a reset, replayed
to late viewers in ``seq`` order), the SSE stream over HTTP, and the labels in a real browser
(shown where the speaker changes, renamed on a connected page)."""

import http.client
import json

import pytest

from captioner.caption_page.address import Bind
from captioner.caption_page.hub import CaptionHub
from captioner.caption_page.server import CaptionServer
from captioner.events import TextDelta, TurnBoundary
from captioner.transcript.model import SpeakerRename
from tests.browser import LINES_JS, chromium, wait_for


def S(text, spk="", src="Meeting", final=True):
    return TextDelta(text, 0.0, 1.0, final, src, speaker=spk)


def ops(hub):
    return [op.data for op in hub.since(None, 0)[1]]


def test_a_final_carries_its_speaker_and_another_voice_starts_a_new_line():
    hub = CaptionHub()
    for ev in (S(" Hello", "Speaker 1"), S(" there", final=False), S(" there.", "Speaker 1"),
               S(" Hi", "Speaker 2"), S(" and", ""), S(" mine", "Speaker 2")):
        hub.publish(ev)
    got = [(o["t"], o.get("at"), o.get("text"), o.get("spk")) for o in ops(hub)]
    assert got == [
        ("final", 0, "Hello", "Speaker 1"), ("final", 5, " there.", "Speaker 1"),
        ("final", 0, "Hi", "Speaker 2"),  # a new line: `at` from 0, the leading space dropped
        ("final", 2, " and", None),  # no speaker: joins the open line
        ("final", 6, " mine", "Speaker 2")]


def test_a_partial_line_takes_the_speaker_of_its_first_final_and_the_old_tail_is_dropped():
    hub = CaptionHub()
    hub.publish(S(" So", final=False))
    hub.publish(S(" So we", "Speaker 3"))  # the line the partial opened: no new line
    hub.publish(S(" agree", final=False))
    hub.publish(S(" No", "Speaker 1"))  # another voice while a partial was shown
    got = ops(hub)
    assert [(o["t"], o.get("at"), o.get("text"), o.get("spk")) for o in got] == [
        ("final", 0, "So we", "Speaker 3"), ("final", 0, "No", "Speaker 1")]
    assert not [o for o in got if o["t"] == "partial"]  # the stale " agree" is not replayed


def test_rename_reaches_viewers_in_order_and_survives_a_reset():
    hub = CaptionHub()
    hub.publish(S("one", "Speaker 2"))
    hub.rename_speaker("Speaker 2", "  Ana\nMaría ")  # cleaned as the transcript cleans names
    hub.publish(S(" two", "Speaker 2"))
    hub.rename_speaker("", "nobody")  # ignored
    hub.publish(SpeakerRename("Speaker 2", "Ana María"))  # unchanged: no op
    got = ops(hub)
    assert [(o["t"], o["seq"]) for o in got] == [("final", 1), ("name", 2), ("final", 3)]
    assert got[1] == {"t": "name", "spk": "Speaker 2", "name": "Ana María", "seq": 2}
    reset, missed = hub.since(hub.epoch, 1)
    assert not reset and [o.data["t"] for o in missed] == ["name", "final"]
    hub.reset()
    hub.publish(S("after", "Speaker 2"))
    assert [(o["t"], o.get("name"), o["seq"]) for o in ops(hub)] == [
        ("name", "Ana María", 1), ("final", None, 2)]  # the new epoch starts with the names
    hub.rename_speaker("Speaker 2", "Speaker 2")  # the id itself: back to the id
    assert ops(hub)[0]["t"] == "final"  # a cleared name is nothing for a new viewer
    assert hub.since(hub.epoch, 2)[1][0].data == {"t": "name", "spk": "Speaker 2", "name": "", "seq": 3}


def test_the_event_stream_carries_speakers_and_names():
    hub = CaptionHub()
    hub.publish(S("Welcome.", "Speaker 1"))
    hub.rename_speaker("Speaker 1", "Host")
    srv = CaptionServer(hub, Bind("127.0.0.1", 0)).start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        conn.request("GET", "/events")
        resp = conn.getresponse()
        assert resp.status == 200
        body = b""
        while body.count(b"data: ") < 3:
            body += resp.read1(65536)
        conn.close()
    finally:
        srv.stop()
    data = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
    assert data[0]["t"] == "reset"  # a new viewer clears its page first
    assert data[1:] == [{"t": "final", "src": "Meeting", "at": 0, "text": "Welcome.", "spk": "Speaker 1", "seq": 1},
                    {"t": "name", "spk": "Speaker 1", "name": "Host", "seq": 2}]


@pytest.fixture(scope="module")
def browser():
    d = chromium()
    yield d
    d.quit()


def shown(browser):
    """Each line as (visible label, final text)."""
    return [tuple(pair) for pair in browser.execute_script(
        "return Array.from(document.querySelectorAll('#lines .line')).map(function (p) {"
        "  var l = p.querySelector('.label');"
        "  return [getComputedStyle(l).display === 'none' ? '' : l.textContent, p.querySelector('.final').textContent];"
        "});")]


def test_the_page_labels_a_change_of_speaker_and_renames_on_a_connected_page(browser):
    hub = CaptionHub()
    srv = CaptionServer(hub, Bind("127.0.0.1", 0)).start()
    try:
        browser.get(srv.url + "?lines=6")
        wait_for(browser, "return document.getElementById('captions').style.fontSize === '40px'")
        for ev in (S("Good morning.", "Speaker 1"), TurnBoundary(1.0, source="Meeting"),
                   S("Still me.", "Speaker 1"), S(" Hello", "Speaker 2"), S(" all", final=False)):
            hub.publish(ev)
        wait_for(browser, "return document.querySelectorAll('#lines .line').length === 3")
        wait_for(browser, "return document.querySelectorAll('#lines .final')[2].textContent === 'Hello'")
        # the label where the voice changes only, bold text before the words (not a colour)
        assert shown(browser) == [("Speaker 1: ", "Good morning."), ("", "Still me."), ("Speaker 2: ", "Hello")]
        assert browser.execute_script(
            "return getComputedStyle(document.querySelector('.line .label')).fontWeight") == "700"
        assert browser.execute_script(LINES_JS)[2]["partial"] == " all"
        hub.rename_speaker("Speaker 1", "Dana")
        wait_for(browser, "return document.querySelector('#lines .label').textContent === 'Dana: '")
        assert shown(browser)[0] == ("Dana: ", "Good morning.")
        assert browser.execute_script(  # every line of that speaker, the hidden label included
            "return document.querySelectorAll('#lines .label')[1].textContent") == "Dana: "
        hub.publish(S("Me again.", "", src="You"))  # the microphone's label is its source's
        wait_for(browser, "return document.querySelectorAll('#lines .line').length === 4")
        assert shown(browser)[3] == ("You: ", "Me again.")
        browser.get(srv.transcript_url)  # a late viewer: the names too
        wait_for(browser, "return document.querySelectorAll('#lines .line').length === 4")
        assert [label for label, _ in shown(browser)] == ["Dana: ", "", "Speaker 2: ", "You: "]
        browser.get(srv.url + "?labels=off")
        wait_for(browser, "return document.querySelectorAll('#lines .line').length === 4")
        assert [label for label, _ in shown(browser)] == ["", "", "", ""]
    finally:
        srv.stop()
