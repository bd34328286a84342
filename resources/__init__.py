"""Package data: the app icon (SVG source + PNG sizes), the tray icons and the Linux desktop files.

Everything is read with :mod:`importlib.resources`, so it works from a source tree, an
installed wheel and a PyInstaller bundle alike. The files live in the top-level ``resources/``
folder, which ``pyproject.toml`` installs as the ``captioner.resources`` package (``package-dir``)
and ``captioner/__init__.py`` maps the same way in a source tree; ``packaging/linux/`` links to the
desktop entry and the metainfo here. No Qt is imported by this module.

PNGs are rendered from the SVGs by ``packaging/render_icons.py`` and committed.
"""

from __future__ import annotations

from importlib import resources

#: Reverse-DNS application id: desktop entry, metainfo and icon names, Flatpak id.
APP_ID = "io.github.captioner.Captioner"
#: PNG sizes of the application icon (freedesktop hicolor sizes up to 512).
APP_ICON_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
#: PNG sizes of the tray icons.
TRAY_ICON_SIZES = (16, 22, 24, 32, 48, 64)
DESKTOP_FILE = f"{APP_ID}.desktop"
METAINFO_FILE = f"{APP_ID}.metainfo.xml"


def read_bytes(name: str) -> bytes:
    """The bytes of the resource file ``name`` (e.g. ``"tray-22.png"``).

    Raises:
        FileNotFoundError: no such resource (a broken install or bundle).
    """
    return resources.files(__name__).joinpath(name).read_bytes()


def app_icon_png(size: int) -> str:
    """Resource name of the application icon at ``size`` pixels."""
    return f"{APP_ID}-{size}.png"


def tray_icon_png(size: int, active: bool = False) -> str:
    """Resource name of the tray icon (``active``: captioning) at ``size`` pixels."""
    return f"tray-active-{size}.png" if active else f"tray-{size}.png"


__all__ = [
    "APP_ICON_SIZES", "APP_ID", "DESKTOP_FILE", "METAINFO_FILE", "TRAY_ICON_SIZES",
    "app_icon_png", "read_bytes", "tray_icon_png",
]
