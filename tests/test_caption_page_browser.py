"""The caption page in a real headless browser (Debian's chromium + chromium-driver, tests/browser.py):
scripted captions in order, partials replaced, turns marked, reconnect after a server restart,
injection attempts, the network mode's token and Host checks, and transparency."""

import io

import pytest

from captioner.caption_page.address import Bind
from captioner.caption_page.hub import CaptionHub
from captioner.caption_page.server import CaptionServer
from captioner.events import TextDelta, TurnBoundary
from tests.browser import LINES_JS, chromium, wait_for

REBIND_HOST = "rebind.attacker.example"


@pytest.fixture(scope="module")
def browser():
    d = chromium(resolve={REBIND_HOST: "127.0.0.1"})
    yield d
    d.quit()


@pytest.fixture
def serve():
    servers = []

    def start(hub, bind=Bind("127.0.0.1", 0), **kw):
        srv = CaptionServer(hub, bind, **kw).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


def T(text, src="You", final=True):
    return TextDelta(text, 0.0, 1.0, final, src)


def lines(browser):
    return browser.execute_script(LINES_JS)


def test_scripted_run_in_order_partials_replaced_turns_marked(browser, serve):
    hub = CaptionHub()
    srv = serve(hub)
    browser.get(srv.url + "?lines=5")
    wait_for(browser, "return document.getElementById('captions').style.fontSize === '40px'")
    hub.publish(T(" Good", final=False))
    wait_for(browser, "return document.querySelector('#lines .partial') && "
                      "document.querySelector('#lines .partial').textContent === 'Good'")
    assert browser.execute_script(
        "return getComputedStyle(document.querySelector('#lines .partial')).fontStyle") == "italic"
    hub.publish(T(" Good morning", final=False))  # replaces the partial, never appends to it
    hub.publish(T(" Good morning,"))
    hub.publish(T(" every", final=False))
    wait_for(browser, "return document.querySelector('#lines .partial').textContent === ' every'")
    assert lines(browser) == [{"label": "You: ", "final": "Good morning,", "partial": " every", "turn": False}]
    hub.publish(T(" everyone."))
    hub.publish(TurnBoundary(2.0, source="You"))
    hub.publish(T("Hello from the room", src="Meeting"))
    hub.publish(T(" Thanks", final=False))
    wait_for(browser, "return document.querySelectorAll('#lines .line').length === 3")
    got = lines(browser)
    assert [(ln["final"], ln["partial"], ln["turn"]) for ln in got] == [  # "You" spoke on: a new line
        ("Good morning, everyone.", "", True), ("Hello from the room", "", False), ("", "Thanks", False)]
    assert got[1]["label"] == "Meeting: "
    # two sources spoke: labels are shown ("auto"); a turn's mark is drawn after the line
    assert browser.execute_script("return getComputedStyle(document.querySelector('.label')).display") == "inline"
    assert browser.execute_script(  # the dash, with no text for assistive technology (`/ ""`)
        "return getComputedStyle(document.querySelector('.line.turn'), '::after').content") == '" \u2014" / ""'
    # the transcript path: the whole session for a late viewer, partial tail at the end
    browser.get(srv.transcript_url)
    wait_for(browser, "return document.querySelectorAll('#lines .line').length === 3")
    assert [ln["final"] + ln["partial"] for ln in lines(browser)] == [
        "Good morning, everyone.", "Hello from the room", "Thanks"]


def test_page_survives_a_server_restart_and_shows_missed_finals_once(browser, serve):
    hub = CaptionHub()
    first = serve(hub)
    port = first.port
    browser.get(first.url)
    hub.publish(T("one"))
    wait_for(browser, "return document.querySelector('#lines .final') && "
                      "document.querySelector('#lines .final').textContent === 'one'")
    assert first.stop()
    for word in (" two", " three"):  # said while the page's server was down
        hub.publish(T(word))
    hub.publish(TurnBoundary(1.0, source="You"))
    second = serve(hub, Bind("127.0.0.1", port))
    hub.publish(T("four"))
    wait_for(browser, "return document.querySelectorAll('#lines .line').length === 2", 20)
    assert [(ln["final"], ln["turn"]) for ln in lines(browser)] == [("one two three", True), ("four", False)]
    assert second.viewers == 1


def test_injection_in_parameters_is_refused_and_text_is_escaped(browser, serve):
    hub = CaptionHub()
    srv = serve(hub)
    for query in ("?color=%3C/style%3E%3Cscript%3Ewindow.pwned=1%3C/script%3E",
                  "?font=sans;background:url(http://127.0.0.1:1/x)", "?bg=red%22%20onload=%22window.pwned=1",
                  "?size=40px;position:fixed", "?align=center%3Cimg%20src=x%20onerror=window.pwned=1%3E"):
        browser.get(srv.url + query)
        body = browser.execute_script("return document.body.innerText")
        assert "captioner caption page:" in body, query
        assert browser.execute_script("return window.pwned === undefined && !document.querySelector('script, img')")
    hub.publish(T('<img src=x onerror="window.pwned=1"><b>bold</b>'))
    browser.get(srv.url)
    wait_for(browser, "return document.querySelector('#lines .final')")
    assert lines(browser)[0]["final"] == '<img src=x onerror="window.pwned=1"><b>bold</b>'
    assert browser.execute_script("return window.pwned === undefined && !document.querySelector('#lines img, b')")


def test_network_mode_refuses_wrong_token_and_foreign_host(browser, serve):
    hub = CaptionHub()
    hub.publish(T("secret words"))
    srv = serve(hub, Bind("0.0.0.0", 0))
    local = f"http://127.0.0.1:{srv.port}/"
    browser.get(local + srv.token + "/")
    wait_for(browser, "return document.querySelector('#lines .final')")
    for url in (local, local + "wrong-token-123/", local + "events", f"http://{REBIND_HOST}:{srv.port}/{srv.token}/"):
        browser.get(url)
        text = browser.execute_script("return document.body.innerText")
        assert "captioner:" in text and "secret" not in text, url
        assert "refused" in text or "token" in text


def test_screenshot_shows_the_background_through_the_page(serve):
    from PIL import Image

    hub = CaptionHub()
    hub.publish(T("Captions over video"))
    srv = serve(hub)
    d = chromium(640, 240, background=(0, 200, 0))  # the "video": pure green behind the page
    try:
        d.get(srv.url + "?opacity=50&bg=black&size=40&lines=1")
        wait_for(d, "return document.querySelector('#lines .final')")
        img = Image.open(io.BytesIO(d.get_screenshot_as_png())).convert("RGB")
        box = d.execute_script("var r = document.getElementById('captions').getBoundingClientRect();"
                               "return [r.left, r.top, r.right, r.bottom];")
    finally:
        d.quit()
    assert img.getpixel((10, 10)) == (0, 200, 0)  # outside the caption box: the video itself
    inside = img.getpixel((int(box[0]) + 3, int(box[1]) + 2))  # box padding: black at 50 % over green
    assert inside[0] < 10 and 90 <= inside[1] <= 110 and inside[2] < 10
