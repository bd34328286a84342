"""Draw the screenshot test's backdrop "slide" with Qt (no ImageMagick fonts needed).

    python tests/make_slide.py OUT.png [WIDTH HEIGHT]

ImageMagick's text drawing needs Ghostscript fonts that a ``--no-install-recommends``
install lacks (``unable to read font helvetica``); Qt draws with fontconfig's fonts
(``fonts-dejavu-core`` from ``scripts/apt-packages.txt``) on the offscreen platform.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPointF, Qt  # noqa: E402
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QLinearGradient, QPainter  # noqa: E402


def make_slide(path: str, width: int = 1280, height: int = 800) -> None:
    """Write a ``width`` x ``height`` PNG: a blue-to-peach gradient with a title and a subtitle."""
    image = QImage(width, height, QImage.Format.Format_RGB32)
    painter = QPainter(image)
    gradient = QLinearGradient(QPointF(0, 0), QPointF(0, height))
    gradient.setColorAt(0.0, QColor("#1f4e79"))
    gradient.setColorAt(1.0, QColor("#f4b183"))
    painter.fillRect(image.rect(), gradient)
    painter.setPen(Qt.GlobalColor.white)
    painter.setFont(QFont("DejaVu Sans", 36))
    painter.drawText(80, 160, "Quarterly report")
    painter.setFont(QFont("DejaVu Sans", 22))
    painter.drawText(80, 230, "Revenue, roadmap and the new release")
    painter.end()
    if not image.save(path):
        raise SystemExit(f"cannot write {path}")


if __name__ == "__main__":
    app = QGuiApplication(sys.argv[:1])
    w, h = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) >= 4 else (1280, 800)
    make_slide(sys.argv[1], w, h)
