"""Issue 22: a screen reader is not flooded during captioning (AT-SPI events counted on a real bus).

The real window (fake engine, tests/ui/atspi_app.py) replays 39 s of captioning -- levels
15 times a second, a growing partial, finals, turn ends, a backlog wandering round 1 s --
on a private X display and session bus with at-spi2-core's bus and registry, and a listener
registered as a screen reader is counts the ``org.a11y.atspi.Event.*`` signals.

Before: 662 events in 39 s in the issue's run; this replay counted 729 (18.7/s) on the old
code: 491 meter descriptions, 128 renames of the live label, 17 status flaps. After: 89
(2.3/s), of which 72 are Start disabling and enabling the form (once per run, whatever its
length), and one text insertion per finished line (two before: block, then text). Required: each finished line is heard once, the status only when it matters: a
bound per finished line, never per level or partial.
"""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

import pytest

from x11_desktop import AtspiListener, desktop, missing, read_line

pytestmark = [pytest.mark.gui, pytest.mark.skipif(
    bool(missing("Xvfb", "dbus-daemon")) or not Path("/usr/libexec/at-spi-bus-launcher").exists(),
    reason="needs Xvfb, dbus-daemon and at-spi2-core (scripts/apt-packages.txt)")]
pytest.importorskip("jeepney", reason="needs jeepney (the test extra)")

APP = Path(__file__).resolve().parent / "atspi_app.py"
SECONDS = 39.0
#: AT-SPI events allowed per finished line (its insert into the pane, the caret, the scroll bar)
#: and for the run as a whole (the status line, a warning appearing), besides the form's
#: enabled/sensitive changes at Start, which are bounded on their own (FORM).
PER_LINE, PER_RUN, FORM = 4, 20, 100


def test_a_captioning_run_sends_a_bounded_number_of_atspi_events(tmp_path):
    with desktop(tmp_path, window_manager=False) as d:
        d.start_dbus()
        listener = AtspiListener(d.env["DBUS_SESSION_BUS_ADDRESS"])
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
            before = listener.count()
            reply = say("run")
            assert reply.startswith("fed "), (reply, (tmp_path / "app.log").read_text()[-3000:])
            lines = int(reply.split()[1])
            listener.settle()
            run_events = listener.snapshot()[before:]
            assert say("stop") == "stopped"
            app.stdin.write("quit\n")
            app.stdin.flush()
            app.wait(15)
        finally:
            listener.close()
    kinds = collections.Counter(kind + (f"[{detail}]" if detail else "") for kind, detail, _ in run_events)
    print(f"AT-SPI events during {SECONDS:.0f} s of captioning: {len(run_events)} "
          f"({len(run_events) / SECONDS:.1f}/s), {lines} finished lines: {dict(kinds)}")
    by_object = collections.Counter((kind, detail, path) for kind, detail, path in run_events)
    print("most frequent:", by_object.most_common(8))
    assert lines >= 5
    form = sum(n for k, n in kinds.items() if k in ("Object:StateChanged[enabled]", "Object:StateChanged[sensitive]"))
    assert form <= FORM, dict(kinds)
    assert len(run_events) - form <= PER_LINE * lines + PER_RUN, dict(kinds)
    # never per level tick (~585 here) or per partial (~100): the bound above is far below either
    assert kinds.get("Object:TextChanged[insert]", 0) == lines  # each finished line heard once (one insertion)
    names = kinds.get("Object:PropertyChange[accessible-name]", 0)
    descriptions = kinds.get("Object:PropertyChange[accessible-description]", 0)
    assert names + descriptions <= lines + 10, dict(kinds)
