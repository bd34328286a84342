"""Render the PNG (and Windows .ico / macOS .icns) icons from the SVG sources with Qt.

The SVGs in ``resources/`` (installed as ``captioner.resources``) are the sources; the PNGs next to them are
committed, so neither the app nor its users need an SVG renderer. Run after editing an SVG:

    QT_QPA_PLATFORM=offscreen python packaging/render_icons.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QGuiApplication, QImage, QImageWriter, QPainter
from PySide6.QtSvg import QSvgRenderer

ROOT = Path(__file__).resolve().parent.parent
RES = ROOT / "resources"
APP_ID = "io.github.captioner.Captioner"
#: Sizes desktops and the freedesktop icon theme want for an application icon.
APP_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
#: Sizes system trays ask for.
TRAY_SIZES = (16, 22, 24, 32, 48, 64)


def render(svg: Path, size: int) -> QImage:
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"cannot read {svg}")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    return image


def save(image: QImage, path: Path, fmt: bytes | None = None) -> None:
    writer = QImageWriter(str(path), fmt or path.suffix[1:].encode())
    if not writer.write(image):
        raise SystemExit(f"cannot write {path}: {writer.errorString()}")
    print(path.relative_to(ROOT))


def main() -> int:
    app = QGuiApplication(sys.argv[:1])  # noqa: F841 (QPainter on QImage needs the fonts/gui subsystem)
    for size in APP_SIZES:
        save(render(RES / f"{APP_ID}.svg", size), RES / f"{APP_ID}-{size}.png")
    for name in ("tray", "tray-active"):
        for size in TRAY_SIZES:
            save(render(RES / f"{name}.svg", size), RES / f"{name}-{size}.png")
    out = ROOT / "packaging" / "pyinstaller"
    save(render(RES / f"{APP_ID}.svg", 256), out / "captioner.ico", b"ico")
    save(render(RES / f"{APP_ID}.svg", 512), out / "captioner.icns", b"icns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
