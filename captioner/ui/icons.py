"""QIcons built from the packaged PNGs (no SVG plugin needed at run time)."""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtGui import QIcon, QPixmap

from captioner import resources


def _icon(names: list[str]) -> QIcon:
    icon = QIcon()
    for name in names:
        pix = QPixmap()
        if pix.loadFromData(resources.read_bytes(name), "PNG"):
            icon.addPixmap(pix)
    return icon


@lru_cache(maxsize=None)
def application_icon() -> QIcon:
    """The app icon (window title bars, task switchers, the overlay), every packaged size."""
    return _icon([resources.app_icon_png(s) for s in resources.APP_ICON_SIZES])


@lru_cache(maxsize=None)
def tray_icon(active: bool = False) -> QIcon:
    """The tray icon: white bubble with a dark outline (idle) or red (captioning); reads on light and dark panels."""
    return _icon([resources.tray_icon_png(s, active) for s in resources.TRAY_ICON_SIZES])
