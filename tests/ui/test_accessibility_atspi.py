"""Issue 39 through a real AT-SPI bus: the tree a screen reader walks, and what it is told.

The real window (fake engine, tests/ui/atspi_app.py) runs on a private X display and session
bus with at-spi2-core's bus launcher and registry (scripts/apt-packages.txt); the tree is read
over D-Bus (tests/ui/atspi_tree.py, jeepney) and the events are collected by a listener
registered as a screen reader is (tests/ui/x11_desktop.py's AtspiListener).

Required: no focusable, shown object of the main window or the Settings dialog is unnamed;
the transcript pane is named "Transcript" and the announcements come from it; a scripted run
announces each finished line once (text as the pane shows it, politely), never a partial;
the status line is read out at most once a second.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from x11_desktop import AtspiListener, desktop, missing, read_line, wait_for

pytestmark = [pytest.mark.gui, pytest.mark.skipif(
    bool(missing("Xvfb", "dbus-daemon")) or not Path("/usr/libexec/at-spi-bus-launcher").exists(),
    reason="needs Xvfb, dbus-daemon and at-spi2-core (scripts/apt-packages.txt)")]
pytest.importorskip("jeepney", reason="needs jeepney (the test extra)")

APP = Path(__file__).resolve().parent / "atspi_app.py"
SECONDS = 20.0
#: AtspiLive (at-spi2-core): the politeness Qt sends for QAccessible.AnnouncementPoliteness.Polite.
ATSPI_LIVE_POLITE = 1


def test_a_screen_reader_finds_every_control_named_and_hears_each_line_once(tmp_path):
    from atspi_tree import AtspiTree

    with desktop(tmp_path, window_manager=False) as d:
        d.start_dbus()
        listener = AtspiListener(d.env["DBUS_SESSION_BUS_ADDRESS"])
        tree = AtspiTree(listener.address)
        try:
            d.env.update({"QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1", "QT_ACCESSIBILITY": "1",
                          "AT_SPI_BUS_ADDRESS": listener.address})
            d.env.pop("NO_AT_BRIDGE", None)
            app = d.spawn([sys.executable, str(APP), str(SECONDS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=open(tmp_path / "app.log", "w"), text=True, bufsize=1)

            def say(what: str) -> str:
                app.stdin.write(what + "\n")
                app.stdin.flush()
                return read_line(app, 60)

            assert read_line(app, 60) == "ready", (tmp_path / "app.log").read_text()[-3000:]
            listener.settle()
            window = tree.walk()
            assert say("settings") == "settings"
            listener.settle()
            with_dialog = tree.walk()
            before = listener.count()
            reply = say("run")
            assert reply.startswith("fed "), (reply, (tmp_path / "app.log").read_text()[-3000:])
            listener.settle()
            lines = json.loads(say("lines"))
            # the status settles on "Captioning": read out once its second is up, not before
            wait_for(lambda: any(m == "Captioning" for _, m, _ in list(listener.announcements)), 10,
                     "the status read-out")
            with listener._lock:
                announced = list(listener.announcements)
                run_events = listener.events[before:]
            assert say("stop") == "stopped"
            app.stdin.write("quit\n")
            app.stdin.flush()
            app.wait(15)
        finally:
            tree.close()
            listener.close()
    for nodes, what in ((window, "main window"), (with_dialog, "Settings")):
        shown = [n for n in nodes if n.focusable_and_shown]
        print(f"{what}: {len(nodes)} accessible objects, {len(shown)} focusable and shown")
        assert len(shown) >= 8, what
        assert [(n.role, n.description) for n in shown if not n.name.strip()] == [], what
    assert any(n.role == "dialog" and n.name == "captioner settings" for n in with_dialog)
    panes = [n for n in window if n.name == "Transcript"]
    assert len(panes) == 1 and "announced" in panes[0].description, panes
    # -- announcements: one per finished line, the pane's text, politely, from the pane ---------------
    status = next(n for n in window if n.name == "Status")
    from_pane = [(msg, polite) for path, msg, polite in announced if path == panes[0].path]
    from_status = [msg for path, msg, _ in announced if path == status.path]
    print(f"{len(lines)} lines, {len(from_pane)} line announcements, status read-outs {from_status}, "
          f"{len(run_events)} AT-SPI events in the run")
    assert len(lines) >= 3
    assert [msg for msg, _ in from_pane] == [ln.split("] ", 1)[1] for ln in lines]  # each once, as shown
    assert all(polite == ATSPI_LIVE_POLITE for _, polite in from_pane)
    assert not any(ln.split("] ", 1)[1].startswith("talk") for ln in lines)  # no file name first
    assert 1 <= len(from_status) <= 3 and from_status[-1] == "Captioning", from_status
