"""Where the main window and the caption overlay go on the first run (nothing remembered yet).

The overlay's default place is the bottom of the screen; the main window goes above it,
as tall as its default or as fits, so the overlay never covers the window's bottom row
(Folder…, Save as…) and never takes its clicks. On a screen too small for both, the
window gets its minimum height and the overlay goes right below it, as far as the
screen allows.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QRect, QSize

#: Space (px) kept between the main window's frame and the overlay.
GAP = 12
#: Title bar and borders assumed while the window manager has not told us (px, vertical / horizontal).
FRAME_GUESS = QMargins(4, 32, 4, 4)


def first_run_placement(available: QRect, overlay: QRect, window: QSize, minimum: QSize,
                        frame: QMargins | None = None) -> tuple[QRect, QRect]:
    """The main window's client rectangle and the overlay's rectangle for a first run.

    Args:
        available: the screen's available geometry.
        overlay: the overlay's default geometry on that screen (bottom centre).
        window: the main window's default client size.
        minimum: the main window's minimum client size.
        frame: the window manager's frame margins round the client area (a guess when unknown).

    Returns:
        ``(window_client_rect, overlay_rect)``; the window's frame and the overlay do not
        overlap unless the screen cannot hold both at their minimum sizes.
    """
    frame = frame if frame is not None and not frame.isNull() else FRAME_GUESS
    fw, fh = frame.left() + frame.right(), frame.top() + frame.bottom()
    room = overlay.top() - GAP - available.top()  # frame height that fits above the overlay
    height = max(minimum.height(), min(window.height(), room - fh, available.height() - fh))
    width = max(minimum.width(), min(window.width(), available.width() - fw))
    x = available.left() + frame.left() + max(0, (available.width() - fw - width) // 2)
    client = QRect(x, available.top() + frame.top(), width, height)
    frame_bottom = client.bottom() + frame.bottom()
    placed = QRect(overlay)
    if placed.top() <= frame_bottom + GAP:  # too small a screen: the overlay goes right below the window
        placed.moveTop(min(frame_bottom + GAP, available.bottom() - placed.height() + 1))
    return client, placed
