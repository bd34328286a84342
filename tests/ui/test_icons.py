"""The packaged icons reach the window, the overlay, the app and the tray."""

from __future__ import annotations

import pytest

from captioner.ui.icons import application_icon, tray_icon

pytestmark = pytest.mark.gui


def test_icons_have_every_size(qapp):
    sizes = {(s.width(), s.height()) for s in application_icon().availableSizes()}
    assert {(16, 16), (32, 32), (48, 48), (256, 256), (512, 512)} <= sizes
    for active in (False, True):
        assert not tray_icon(active).isNull()
        assert (22, 22) in {(s.width(), s.height()) for s in tray_icon(active).availableSizes()}
    idle = tray_icon(False).pixmap(22).toImage()
    busy = tray_icon(True).pixmap(22).toImage()
    assert idle != busy  # captioning shows differently


def test_app_window_overlay_and_tray_use_the_icons(qtbot, settings):
    from captioner.ui.app import CaptionerApp

    gui = CaptionerApp(settings)
    qtbot.addWidget(gui.window)
    qtbot.addWidget(gui.overlay)
    want = application_icon().pixmap(48).toImage()
    assert gui.window.windowIcon().pixmap(48).toImage() == want
    assert gui.overlay.windowIcon().pixmap(48).toImage() == want
    assert gui.tray.icon.icon().pixmap(22).toImage() == tray_icon(False).pixmap(22).toImage()
    gui.tray.set_state("running")
    assert gui.tray.icon.icon().pixmap(22).toImage() == tray_icon(True).pixmap(22).toImage()
    gui.shutdown()


def test_tray_icon_reads_on_light_and_dark_panels(qapp):
    """Both icons have opaque dark pixels (seen on light panels) and opaque light ones (dark panels)."""
    for active in (False, True):
        image = tray_icon(active).pixmap(22).toImage()
        dark = light = 0
        for y in range(image.height()):
            for x in range(image.width()):
                c = image.pixelColor(x, y)
                if c.alpha() < 200:
                    continue
                luma = 0.299 * c.red() + 0.587 * c.green() + 0.114 * c.blue()
                dark += luma < 60
                light += luma > 180
        assert dark >= 20 and light >= 20, (active, dark, light)
