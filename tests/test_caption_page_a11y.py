"""The caption page for assistive technology (issue 39, point 4): language, title and landmarks;
finished text in a polite live region and the partial tail hidden from the accessibility tree
(Chromium's own tree, through the DevTools protocol); the default look's contrast, computed from
the CSS and appearance defaults; ``prefers-reduced-motion`` stopping the rolling animation; and
axe-core (the copy axe-selenium-python carries) finding no violation in Debian's chromium."""

import re
from html.parser import HTMLParser

import pytest

from captioner.caption_page import appearance
from captioner.caption_page.address import Bind
from captioner.caption_page.hub import CaptionHub
from captioner.caption_page.server import CaptionServer, resource
from captioner.events import TextDelta, TurnBoundary
from tests.browser import chromium, wait_for

CSS = resource("caption-page.css").decode()
AA = 4.5  # WCAG 2.2 success criterion 1.4.3, Contrast (Minimum), normal-size text


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.title = [], ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_title = tag == "title"

    def handle_data(self, data):
        if self._in_title:
            self.title += data

    def handle_endtag(self, tag):
        self._in_title = False


@pytest.mark.parametrize("name", ["caption-page.html", "caption-transcript.html"])
def test_pages_have_language_title_landmark_and_a_polite_log(name):
    parsed = _Tags()
    parsed.feed(resource(name).decode())
    tags = {tag: attrs for tag, attrs in reversed(parsed.tags)}
    assert tags["html"]["lang"] == "en" and parsed.title.startswith("captioner — ")
    assert "main" in tags and "h1" in tags
    lines = next(attrs for tag, attrs in parsed.tags if attrs.get("id") == "lines")
    assert lines["role"] == "log" and lines["aria-live"] == "polite" and lines["aria-label"]


def _luminance(rgb):
    """WCAG 2.2 relative luminance of an sRGB colour given as 0-255 floats."""
    lin = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _ratio(a, b):
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _over(top, alpha, under):
    return [alpha * t + (1 - alpha) * u for t, u in zip(top, under)]


def _rgb(hexed):
    return [int(hexed[i:i + 2], 16) for i in (1, 3, 5)]


def _opacity(selector):
    rule = re.search(re.escape(selector) + r"\s*\{([^}]*)\}", CSS).group(1)
    return float(re.search(r"opacity:\s*([0-9.]+)", rule).group(1))


def test_ratio_formula_matches_known_values():
    assert _ratio([255] * 3, [0] * 3) == pytest.approx(21.0)
    assert _ratio([118] * 3, [255] * 3) == pytest.approx(4.54, abs=0.01)  # #767676 on white: the AA edge


@pytest.mark.parametrize("page", ["captions", "transcript"])
def test_default_appearance_contrast(page):
    """Text, the italic partial tail and the turn mark (CSS opacity over the box) against the
    default box (``bg`` at ``opacity``) laid over the worst video behind it: white or black."""
    d = appearance.DEFAULTS[page]
    text, bg, alpha = _rgb(d["color"]), _rgb(d["bg"]), d["opacity"] / 100
    worst = []
    for behind in ([255.0] * 3, [0.0] * 3):
        box = _over(bg, alpha, behind)
        for fade in (1.0, _opacity(".partial"), _opacity(".line.turn::after")):
            worst.append(_ratio(_over(text, fade, box), box))
    assert min(worst) >= AA, worst
    if page == "captions":  # 60 % black over white is #666: white 5.74:1, the tail at 0.85 4.69:1
        assert min(worst) == pytest.approx(4.69, abs=0.01)


def test_reduced_motion_rule_stops_the_roll():
    assert re.search(r"body\.captions #lines\.roll\s*\{\s*animation:\s*roll-up\b", CSS)
    media = re.search(r"@media \(prefers-reduced-motion: reduce\)\s*\{(.*?)\n\}", CSS, re.S).group(1)
    assert re.search(r"#lines\.roll\s*\{\s*animation:\s*none", media)


# -- in chromium --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    d = chromium()
    yield d
    d.quit()


@pytest.fixture
def server():
    hub = CaptionHub()
    srv = CaptionServer(hub, Bind("127.0.0.1", 0)).start()
    yield hub, srv
    srv.stop()


def _conversation(hub):
    for ev in (TextDelta("Good morning.", 0, 1, True, "Meeting", speaker="Speaker 1"),
               TurnBoundary(1.0, source="Meeting"),
               TextDelta("Hello", 1, 2, True, "Meeting", speaker="Speaker 2"),
               TextDelta(" every", 1, 2, False, "Meeting"),
               TextDelta("Me too.", 1, 2, True, "You")):
        hub.publish(ev)


def _ax_text(browser):
    """The text nodes of Chromium's accessibility tree (ignored ones left out), and the live region."""
    nodes = [n for n in browser.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"] if not n.get("ignored")]
    text = [n["name"]["value"] for n in nodes if n["role"]["value"] == "StaticText"]
    log = next(n for n in nodes if n["role"]["value"] == "log")
    props = {p["name"]: p["value"].get("value") for p in log.get("properties", [])}
    return text, log["name"]["value"], props


@pytest.mark.parametrize("path", ["", "transcript"])
def test_finished_text_is_live_and_the_partial_tail_is_not_in_the_tree(browser, server, path):
    hub, srv = server
    browser.get(srv.url + path + "?labels=on")
    wait_for(browser, "return document.getElementById('captions').style.fontSize")
    hub.publish(TextDelta(" Good", 0, 1, False, "Meeting"))  # a line opened by a partial: nothing to read
    wait_for(browser, "return document.querySelector('#lines .partial')")
    assert browser.execute_script("return document.querySelector('#lines .label').offsetWidth") > 0  # drawn
    text, _, _ = _ax_text(browser)
    assert "Good" not in text and "Meeting: " not in text
    hub.publish(TextDelta(" Good", 0, 1, True, "Meeting"))  # its first final: label and words together
    wait_for(browser, "return document.querySelector('#lines .final').textContent === 'Good'")
    assert _ax_text(browser)[0][-2:] == ["Meeting: ", "Good"]
    hub.reset()
    _conversation(hub)
    wait_for(browser, "return document.querySelectorAll('#lines .line').length === 3")
    text, name, props = _ax_text(browser)
    assert props["live"] == "polite" and props["atomic"] is False and name in ("Captions", "Transcript")
    assert text[-6:] == ["Speaker 1: ", "Good morning.", "Speaker 2: ", "Hello", "You: ", "Me too."]
    assert " every" not in text and not [t for t in text if "\u2014" in t]  # tail and turn mark unread
    assert browser.execute_script("return document.querySelectorAll('#lines .partial')[1].textContent") == " every"
    # each final arrives as its own text node: a screen reader hears only the new words
    hub.publish(TextDelta(" everyone.", 2, 3, True, "Meeting", speaker="Speaker 2"))
    wait_for(browser, "return document.querySelectorAll('#lines .final')[1].textContent === 'Hello everyone.'")
    assert browser.execute_script("return document.querySelectorAll('#lines .final')[1].childNodes.length") == 2


@pytest.mark.parametrize("reduce, expected", [(False, "roll-up"), (True, "none")])
def test_prefers_reduced_motion_stops_the_rolling_animation(browser, server, reduce, expected):
    hub, srv = server
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [
        {"name": "prefers-reduced-motion", "value": "reduce" if reduce else "no-preference"}]})
    try:
        browser.get(srv.url)
        wait_for(browser, "return document.getElementById('captions').style.fontSize")
        hub.publish(TextDelta("A new line", 0, 1, True, "You"))
        wait_for(browser, "return document.querySelector('#lines.roll')")
        assert browser.execute_script("return getComputedStyle(document.getElementById('lines')).animationName") \
            == expected
        if reduce:
            assert browser.execute_script("return document.getAnimations().length") == 0
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def _axe(browser):
    from axe_selenium_python import Axe

    axe = Axe(browser)
    axe.inject()
    return axe, axe.run()


def test_axe_core_finds_no_violation(browser, server):
    hub, srv = server
    browser.get(srv.url)  # the empty page first (the caption box is hidden until text comes)
    wait_for(browser, "return document.getElementById('captions').classList.contains('empty')")
    axe, result = _axe(browser)
    assert result["violations"] == [], axe.report(result["violations"])
    _conversation(hub)
    for url in (srv.url, srv.url + "?size=20&opacity=100&labels=on", srv.transcript_url):
        browser.get(url)
        wait_for(browser, "return document.querySelectorAll('#lines .line').length === 3")
        wait_for(browser, "return document.getAnimations().length === 0")  # the roll has ended
        axe, result = _axe(browser)
        assert result["violations"] == [], (url, axe.report(result["violations"]))
        passed = {rule["id"] for rule in result["passes"]}
        assert {"color-contrast", "html-has-lang", "document-title", "landmark-one-main", "region",
                "aria-allowed-attr", "aria-valid-attr-value"} <= passed, passed
    # the check has teeth: grey text on the default box is reported
    browser.execute_script("document.getElementById('captions').style.color = '#555555'")
    _, result = _axe(browser)
    assert "color-contrast" in {rule["id"] for rule in result["violations"]}
