"""Issue 49, name alerts in the app: the overlay's banner and frame for a few seconds, the desktop
notification (tray, else the freedesktop service on D-Bus), the sound only when asked for, and
the "Alert me when someone says:" list in Settings (persisted, joined to the hotwords)."""

from __future__ import annotations

import shutil
import subprocess
import threading

import pytest
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from captioner.events import TextDelta
from captioner.ui import desktop_notify
from captioner.ui.name_alerts import TITLE, NameAlerts
from captioner.ui.overlay import CaptionOverlay
from captioner.ui.overlay_alert import FRAME_COLOUR
from captioner.ui.settings import Keys, hotword_backend_options
from captioner.ui.settings_dialog import SettingsDialog

pytestmark = pytest.mark.gui


def final(text: str, source: str = "Meeting", start: float = 61.0) -> TextDelta:
    return TextDelta(text, start, start + 1.0, True, source)


class FakeTray:
    def __init__(self, works: bool) -> None:
        self.works = works
        self.shown: list[tuple] = []

    def notify(self, text, ms=8000, title="captioner", icon=None) -> bool:
        if self.works:
            self.shown.append((title, text, ms, icon))
        return self.works


@pytest.fixture
def overlay(qtbot, settings):
    o = CaptionOverlay(settings)
    qtbot.addWidget(o)
    o.resize(800, 140)
    o.show()
    return o


@pytest.fixture
def alerts(settings, overlay):
    settings.set(Keys.ALERT_WORDS, ["Maria"])
    sent = []
    a = NameAlerts(settings, overlay, FakeTray(False), send=lambda *args: sent.append(args))
    a.sent = sent
    a.banner_ms = 300  # a short banner: the test waits for it to go, without sleeping
    a.begin_run(["You"])
    return a


def frame_pixel(overlay) -> QColor:
    image = overlay.grab().toImage()
    return QColor(image.pixel(2, image.height() // 2))


def test_an_alert_shows_a_banner_and_a_frame_then_goes(qtbot, overlay, alerts):
    before = frame_pixel(overlay)
    alerts.on_event(final("Thanks Maria, that helps."))
    qtbot.waitUntil(lambda: overlay.alert_text() != "", timeout=1000)
    assert overlay.alert_text() == 'ALERT: "Maria" said by Meeting'
    label = overlay.alert_label
    assert label.isVisible() and label.accessibleName() == overlay.alert_text()
    assert label.geometry().bottom() <= overlay.height() * 0.5 + 8  # the newest caption line stays in view
    assert frame_pixel(overlay) == QColor(FRAME_COLOUR) != before  # the thick frame, not a tint of the panel
    assert alerts.sent == [(TITLE, overlay.alert_text(), 300)]  # no tray here: the D-Bus notification
    qtbot.waitUntil(lambda: overlay.alert_text() == "", timeout=3000)
    assert not label.isVisible() and frame_pixel(overlay) == before


def test_the_microphone_and_partials_never_alert(qtbot, overlay, alerts):
    alerts.on_event(final("Maria here, hello.", source="You"))
    alerts.on_event(TextDelta("Maria is", 0.0, 1.0, False, "Meeting"))
    alerts.end_run()
    assert overlay.alert_text() == "" and alerts.sent == [] and alerts.fired == []


def test_a_name_at_the_end_of_the_text_alerts_within_a_second(qtbot, overlay, alerts):
    alerts.on_event(final("Over to you Maria"))  # the word may still go on: held up to 0.6 s
    assert overlay.alert_text() == ""
    qtbot.waitUntil(lambda: overlay.alert_text() != "", timeout=1000)
    assert [a.said for a in alerts.fired] == ["Maria"]


def test_with_a_tray_the_tray_says_it_and_the_sound_only_when_on(qtbot, settings, overlay, monkeypatch):
    beeps = []
    monkeypatch.setattr(QApplication, "beep", staticmethod(lambda: beeps.append(1)))
    settings.set(Keys.ALERT_WORDS, ["Maria"])
    tray, sent = FakeTray(True), []
    a = NameAlerts(settings, overlay, tray, send=lambda *args: sent.append(args))
    a.on_event(final("Maria, look."))
    assert [t[:2] for t in tray.shown] == [(TITLE, 'ALERT: "Maria" said by Meeting')]
    assert tray.shown[0][3] == QSystemTrayIcon.MessageIcon.Information and sent == [] and beeps == []
    settings.set(Keys.ALERT_SOUND, True)
    a.on_event(final("Maria, again.", start=70.0))
    assert len(tray.shown) == 2 and beeps == [1]


def test_the_app_tells_the_tray_for_each_said_name(qtbot, settings, tmp_path, monkeypatch):
    from captioner.ui.app import CaptionerApp

    settings.set(Keys.ALERT_WORDS, ["Maria"])
    app = CaptionerApp(settings)
    qtbot.addWidget(app.window)
    qtbot.addWidget(app.overlay)
    try:
        shown = []
        monkeypatch.setattr(app.tray, "available", True)
        monkeypatch.setattr(app.tray.icon, "supportsMessages", lambda: True)
        monkeypatch.setattr(app.tray.icon, "showMessage", lambda title, text, *a: shown.append((title, text)))
        app.alerts.begin_run(["You"])
        app.window.controller.event.emit(final("Maria and Tom, then Maria's turn."))
        app.window.controller.event.emit(final("I am Maria.", source="You"))
        assert shown == [(TITLE, 'ALERT: "Maria" said by Meeting')] * 2
        assert app.overlay.alert_text().endswith("Meeting")
    finally:
        app.shutdown()


# -- Settings ----------------------------------------------------------------------------------
@pytest.fixture
def dialog(qtbot, settings):
    d = SettingsDialog(settings)
    qtbot.addWidget(d)
    d.show()
    return d


def test_the_list_persists_and_joins_the_hotwords(dialog, settings, tmp_path):
    box = dialog.alerts
    assert box.words.accessibleName() == "Alert me when someone says" and box.words.tabChangesFocus()
    assert box.sound.accessibleName() == "Play a sound with alerts" and not box.sound.isChecked()
    dialog.hotwords.setPlainText("Siobhan\nmaria")
    box.words.setPlainText("Maria\nJean-Luc, Tom\n\nmaria\n")
    box.sound.setChecked(True)
    assert dialog.apply() is True
    assert settings.get(Keys.ALERT_WORDS) == ["Maria", "Jean-Luc", "Tom"] and settings.get(Keys.ALERT_SOUND)
    settings.sync()
    again = type(settings).from_file(settings.store.fileName())
    assert again.get(Keys.ALERT_WORDS) == ["Maria", "Jean-Luc", "Tom"]
    assert dict(hotword_backend_options(again, "default"))["hotwords"] == ("Siobhan", "maria", "Jean-Luc", "Tom")
    assert hotword_backend_options(again, "audio8") == ()  # no biasing there; alerts still match
    reopened = SettingsDialog(settings)
    assert reopened.alerts.words.toPlainText().splitlines() == ["Maria", "Jean-Luc", "Tom"]
    assert reopened.alerts.sound.isChecked()
    reopened.close()


def test_alert_words_alone_reach_the_model(settings):
    settings.set(Keys.ALERT_WORDS, ["Maria"])
    assert dict(hotword_backend_options(settings, "remote"))["hotwords"] == ("Maria",)


def test_a_word_that_cannot_alert_is_refused_and_nothing_is_written(dialog, settings):
    settings.set(Keys.ALERT_WORDS, ["Maria"])
    dialog.alerts.words.setPlainText("C#")
    dialog.lines.setValue(4)
    assert dialog.apply() is False
    assert dialog.error_label.isVisible() and dialog.error_label.text().startswith("Alert words:")
    assert settings.get(Keys.ALERT_WORDS) == ["Maria"] and settings.get(Keys.OVERLAY_LINES) == 2


# -- the freedesktop notification service ------------------------------------------------------
jeepney = pytest.importorskip("jeepney")
needs_dbus = pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="needs dbus-daemon")


@pytest.fixture
def bus(tmp_path):
    """A private D-Bus session bus; yields its address."""
    proc = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
                             f"--address=unix:path={tmp_path}/bus"], stdout=subprocess.PIPE, text=True)
    address = proc.stdout.readline().strip()
    assert address, "dbus-daemon did not start"
    yield address
    proc.terminate()
    proc.wait(5)


@needs_dbus
def test_without_a_tray_the_notification_service_gets_it(bus):
    from jeepney import HeaderFields, MessageType, new_method_return
    from jeepney.io.blocking import open_dbus_connection

    got = []
    ready = threading.Event()

    def serve():
        with open_dbus_connection(bus=bus) as conn:
            conn.send_and_get_reply(jeepney.message_bus.RequestName(desktop_notify.SERVICE), timeout=5)
            ready.set()
            while not got:
                msg = conn.receive(timeout=5)
                if (msg.header.message_type == MessageType.method_call
                        and msg.header.fields.get(HeaderFields.member) == "Notify"):
                    got.append(msg.body)
                    conn.send(new_method_return(msg, "u", (7,)))

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    assert ready.wait(5)
    sender = desktop_notify.send_notification(TITLE, 'ALERT: "Maria"', 5000, bus=bus)
    sender.join(5)
    server.join(5)
    app, replaces, icon, summary, body, actions, hints, timeout = got[0]
    assert (app, summary, body, timeout) == ("captioner", TITLE, 'ALERT: "Maria"', 5000)
    assert hints["urgency"] == ("y", 1)


@needs_dbus
def test_no_notification_service_is_a_log_line_not_a_crash(bus, caplog):
    caplog.set_level("INFO", logger=desktop_notify.__name__)
    sender = desktop_notify.send_notification(TITLE, "text", bus=bus)
    sender.join(5)
    assert not sender.is_alive() and "desktop notification not shown" in caplog.text
    none = desktop_notify.send_notification(TITLE, "text", bus="unix:path=/nonexistent/bus")
    none.join(5)
    assert caplog.text.count("desktop notification not shown") == 2
