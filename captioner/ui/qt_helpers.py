"""Small helpers shared by the main window's panels (no state, no file access)."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QAbstractScrollArea, QAbstractSlider, QAbstractSpinBox, QComboBox, QFormLayout, QHBoxLayout, QLabel, QSlider,
    QWidget,
)


def standard_keys(key: QKeySequence.StandardKey, fallback: str) -> list[QKeySequence]:
    """The platform's bindings of a standard key, or ``fallback`` where it has none
    (X11 without a desktop theme binds no Quit key)."""
    return list(QKeySequence.keyBindings(key)) or [QKeySequence(fallback)]


def select_data(combo: QComboBox, data) -> bool:
    """Select the item of ``combo`` whose data equals ``data``; False when there is none."""
    for i in range(combo.count()):
        if combo.itemData(i) == data:
            combo.setCurrentIndex(i)
            return True
    return False


def format_time(seconds: float) -> str:
    """Stream seconds as ``m:ss`` (``h:mm:ss`` past an hour)."""
    s = int(max(0.0, seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def add_slider_row(form: QFormLayout, label: str, slider: QSlider, shown: Callable[[int], str]) -> QLabel:
    """Add ``label: [slider] value`` to ``form``: the slider with its value in words beside it.

    Args:
        form: the form to add the row to.
        label: the row's label (it stays the slider's buddy and accessible label).
        slider: the slider.
        shown: the slider's value as shown, e.g. ``lambda v: f"{v} %"``.

    Returns:
        The value label (it follows every change of the slider; a slider alone shows no number).
    """
    value = QLabel(shown(slider.value()))
    value.setMinimumWidth(value.fontMetrics().horizontalAdvance(shown(slider.maximum())) + 8)
    slider.valueChanged.connect(lambda v: value.setText(shown(v)))
    row = QWidget()
    lay = QHBoxLayout(row)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(slider, 1)
    lay.addWidget(value)
    form.addRow(label, row)
    name = form.labelForField(row)
    if isinstance(name, QLabel):
        name.setBuddy(slider)
    return value


class WheelGuard(QObject):
    """Event filter of a scrolled form: the mouse wheel over a combo box, spin box or slider that
    does not have the keyboard focus scrolls the form instead of changing the value (Qt's default
    changed settings the user only scrolled past). Click or Tab into a control to use the wheel on it.

    Args:
        scroll: the scroll area the wheel moves instead.
    """

    def __init__(self, scroll: QAbstractScrollArea) -> None:
        super().__init__(scroll)
        self.scroll = scroll

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Wheel and isinstance(obj, QWidget) and not obj.hasFocus():
            QCoreApplication.sendEvent(self.scroll.verticalScrollBar(), event)
            return True
        return False


def guard_wheel(scroll: QAbstractScrollArea) -> WheelGuard:
    """Install a :class:`WheelGuard` on every combo box, spin box and slider inside ``scroll``'s
    widget, and let them take the focus by click or Tab only (not by the wheel). Call it once the
    form is built; returns the guard (owned by ``scroll``)."""
    guard = WheelGuard(scroll)
    for kind in (QComboBox, QAbstractSpinBox, QAbstractSlider):
        for widget in scroll.widget().findChildren(kind):
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            widget.installEventFilter(guard)
    return guard
