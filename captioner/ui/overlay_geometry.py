"""The overlay's remembered place: saved per screen, restored relatively, kept on an existing screen.

:class:`RememberedGeometry` is mixed into :class:`~captioner.ui.overlay.CaptionOverlay` (a
QWidget with ``settings``, ``max_lines``, ``lines_that_fit()``, ``clamped()`` and a debounced
``_save_timer``); the arithmetic lives in :mod:`captioner.ui.overlay_place`.
"""

from __future__ import annotations

from typing import Iterable

from PySide6.QtCore import QRect
from PySide6.QtGui import QGuiApplication, QScreen

from captioner.engine.qt_emit import emit
from captioner.ui.overlay_place import clamp_rect, default_rect, key_size, rescale_rect, screen_key
from captioner.ui.settings import Keys


class RememberedGeometry:
    """Save/restore of the overlay geometry (a mixin for the overlay widget, before QWidget in its bases)."""

    def current_screen(self) -> QScreen | None:
        """The screen that holds the overlay's centre (or the primary one)."""
        screen = QGuiApplication.screenAt(self.geometry().center())
        return screen or QGuiApplication.primaryScreen()

    def save_geometry(self) -> None:
        """Store the geometry (logical px) under the current screen's key."""
        self._save_timer.stop()
        if self._resized_by_user:
            self._resized_by_user = False
            lines = self.lines_that_fit()
            if lines != self.max_lines:  # the user made it taller or shorter: that is the line count now
                self.max_lines = lines
                if self.settings is not None:
                    self.settings.set(Keys.OVERLAY_LINES, lines)
        settled = self.clamped(self.geometry())
        if settled != self.geometry():  # a window-manager move or resize left it partly off the screen
            self._place(settled)
        if self.settings is None:
            return
        screen = self.current_screen()
        if screen is None:
            return
        key = screen_key(screen)
        g = self.geometry()
        self.settings.set_overlay_geometry(key, (g.x(), g.y(), g.width(), g.height()))
        emit(self.geometry_saved, key)

    def default_geometry(self, screen: QScreen) -> QRect:
        """Bottom centre of ``screen``, 70% of its width, tall enough for the line limit."""
        return default_rect(screen.availableGeometry(), self.minimumWidth(), self.preferred_height())

    def restore_geometry(self) -> QRect:
        """Place the overlay where it was on a screen that still exists, clamped onto it.

        Order: the last screen used, if present; else the primary screen's remembered
        rectangle; else the default placement. A rectangle remembered for a screen of
        another size (another resolution, or a monitor that is gone) goes to the same
        relative place (bottom-centre stays bottom-centre, :func:`rescale_rect`); one
        lying off every screen is clamped onto the chosen screen.

        Returns:
            The geometry applied (logical px).
        """
        screens = {screen_key(s): s for s in QGuiApplication.screens()}
        primary = QGuiApplication.primaryScreen()
        target = primary
        rect = None
        if self.settings is not None:
            last = self.settings.get(Keys.OVERLAY_LAST_SCREEN)
            if last in screens:
                target = screens[last]
                rect = self.settings.overlay_geometry(last)
            elif primary is not None:
                rect = self.settings.overlay_geometry(screen_key(primary))
                if rect is None and last:
                    rect = self.settings.overlay_geometry(last)  # another resolution, or the monitor is gone
                    old = key_size(last)
                    if rect is not None and old is not None and old != target.geometry().size():
                        rect = rescale_rect(QRect(*rect), QRect(target.geometry().topLeft(), old),
                                            target.geometry(), self.minimumWidth())
        if target is None:
            return self.geometry()
        geom = QRect(rect) if isinstance(rect, QRect) else QRect(*rect) if rect else self.default_geometry(target)
        self._place(clamp_rect(geom, target.availableGeometry()))
        return self.geometry()

    def place(self, rect: QRect) -> None:
        """Put the overlay at ``rect`` (clamped onto its screen) without counting it as a user move."""
        self._place(self.clamped(rect))

    def _place(self, rect: QRect) -> None:
        self._restoring = True
        try:
            self.setGeometry(rect)
        finally:
            self._restoring = False

    def watch_screens(self) -> None:
        """Follow resolution changes of every screen (and of screens plugged in later): the overlay on a
        screen whose size changes moves to the same relative place (:meth:`screen_resized`)."""
        self._screen_sizes: dict[str, QRect] = {}
        #: (screen name, its geometry, the overlay's place there) after a resolution change, until a user move
        self._wanted: tuple[str, QRect, QRect] | None = None
        app = QGuiApplication.instance()
        if app is None:
            return
        for screen in QGuiApplication.screens():
            self._watch(screen)
        app.screenAdded.connect(self._watch)
        app.screenRemoved.connect(self._on_screen_removed)

    def _watch(self, screen: QScreen) -> None:
        self._screen_sizes[screen.name()] = screen.geometry()
        # a bound method, not a lambda: Qt drops the connection when the overlay is deleted
        screen.geometryChanged.connect(self._on_screen_geometry)
        screen.availableGeometryChanged.connect(self._on_available)

    def _on_screen_geometry(self, geometry: QRect) -> None:
        screen = self.sender()
        if isinstance(screen, QScreen):
            self.screen_resized(screen, geometry)

    def screen_resized(self, screen: QScreen, geometry: QRect) -> QRect:
        """``screen`` now has ``geometry`` (logical px): an overlay on it keeps its relative place.

        The place wanted there (:func:`rescale_rect`, on the new geometry) is kept until the user
        moves the overlay, and clamped again onto the screen's available area whenever that
        changes (:meth:`_on_available`): on a switch to a *larger* mode Qt emits
        ``geometryChanged`` while ``availableGeometry()`` is still the old work area (the window
        manager updates ``_NET_WORKAREA`` after), and clamping onto that once put the overlay
        from 1280x720 back at 1600x1000 at (160, 610) instead of the bottom centre (240, 829)
        (tests/ui/test_overlay_x11.py, a real xrandr switch).

        Returns:
            The overlay's geometry afterwards.
        """
        old = self._screen_sizes.get(screen.name())
        self._screen_sizes[screen.name()] = QRect(geometry)
        if old is None or old.size() == geometry.size() or not old.contains(self.geometry().center()):
            return self.geometry()
        wanted = self._wanted
        source = wanted[2] if wanted is not None and wanted[:2] == (screen.name(), old) else self.geometry()
        moved = clamp_rect(rescale_rect(source, old, geometry, self.minimumWidth()), geometry)
        self._wanted = (screen.name(), QRect(geometry), moved)
        self._place(clamp_rect(moved, screen.availableGeometry().intersected(geometry)))
        self.save_geometry()
        return self.geometry()

    def _on_available(self, area: QRect) -> None:
        screen = self.sender()
        wanted = self._wanted
        if isinstance(screen, QScreen) and wanted is not None and wanted[:2] == (screen.name(), screen.geometry()):
            self._place(clamp_rect(wanted[2], area.intersected(screen.geometry())))
            self.save_geometry()

    def forget_wanted_place(self) -> None:
        """The user moved or resized the overlay: a later work-area change keeps where it is now."""
        self._wanted = None

    def _on_screen_removed(self, screen: QScreen) -> None:
        self._screen_sizes.pop(screen.name(), None)
        if self.current_screen() is screen or QGuiApplication.screenAt(self.geometry().center()) is None:
            self.ensure_on_screen()

    def ensure_on_screen(self, screens: Iterable[QScreen] | None = None) -> QRect:
        """Clamp the overlay onto the screen it overlaps most (or the primary one).

        Args:
            screens: the screens that exist (defaults to ``QGuiApplication.screens()``).

        Returns:
            The new geometry.
        """
        screens = list(screens if screens is not None else QGuiApplication.screens())
        geom = self.geometry()
        best, best_area = None, 0
        for s in screens:
            inter = s.availableGeometry().intersected(geom)
            area = inter.width() * inter.height() if inter.isValid() else 0
            if area > best_area:
                best, best_area = s, area
        if best is None:
            best = QGuiApplication.primaryScreen() if QGuiApplication.primaryScreen() in screens else None
            best = best or (screens[0] if screens else None)
        if best is not None:
            self._place(clamp_rect(geom, best.availableGeometry()))
        return self.geometry()
