"""The overlay's built-in colour presets and the contrast each one reaches (issue 39).

Every preset's text and partial (unstable, italic) colours reach at least
:data:`AA_RATIO` (WCAG 2.2 success criterion 1.4.3, "Contrast (Minimum)", 4.5:1 for body
text) against the preset's own background colour; the "High contrast" preset reaches
:data:`AAA_RATIO` (criterion 1.4.6, "Contrast (Enhanced)", 7:1) and is fully opaque, so what
is behind the overlay cannot lower it. The ratio is WCAG's, from relative luminance
(:func:`~captioner.ui.overlay_text.contrast_ratio`). The partial tail is told apart by being
italic, never by its colour alone (criterion 1.4.1, "Use of Color").
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor

from captioner.ui.overlay_text import contrast_ratio, panel_over

#: WCAG 2.2 contrast levels: AA (1.4.3) and AAA (1.4.6) for normal-size text.
AA_RATIO = 4.5
AAA_RATIO = 7.0
#: Name shown when the colours are not one of the presets.
CUSTOM = "Custom"


@dataclass(frozen=True)
class ColourPreset:
    """One preset: ``#rrggbb`` colours and the panel opacity (0..1) it sets.

    Attributes:
        name: as the Settings dialog lists it.
        text, partial, background: colours of finished text, unstable text and the panel.
        opacity: panel opacity (None: the preset keeps the user's opacity).
        minimum: the contrast ratio this preset promises (text and partial on background).
    """

    name: str
    text: str
    partial: str
    background: str
    opacity: float | None = None
    minimum: float = AA_RATIO

    def ratios(self) -> tuple[float, float]:
        """Contrast of (text, partial) against the preset's own background (1..21)."""
        bg = QColor(self.background)
        return contrast_ratio(QColor(self.text), bg), contrast_ratio(QColor(self.partial), bg)

    def worst_ratio(self, opacity: float) -> float:
        """The lowest (text or partial) ratio with the panel at ``opacity`` over a black or white
        window behind it (what a translucent panel can fall to)."""
        ratios = []
        for backdrop in ("#000000", "#ffffff"):
            panel = panel_over(QColor(self.background), opacity, QColor(backdrop))
            ratios += [contrast_ratio(QColor(self.text), panel), contrast_ratio(QColor(self.partial), panel)]
        return min(ratios)


#: The built-in presets; the first one is the overlay's default colours (captioner.ui.settings).
PRESETS: tuple[ColourPreset, ...] = (
    ColourPreset("White on black (default)", "#ffffff", "#cfe8ff", "#000000"),
    ColourPreset("Yellow on black", "#ffff00", "#e0e0e0", "#000000"),
    ColourPreset("Black on white", "#000000", "#27405e", "#ffffff"),
    ColourPreset("White on dark blue", "#ffffff", "#d6e4ff", "#0b2545"),
    ColourPreset("High contrast", "#ffffff", "#ffff00", "#000000", opacity=1.0, minimum=AAA_RATIO),
)


def preset_named(name: str) -> ColourPreset | None:
    """The preset called ``name``, or None."""
    return next((p for p in PRESETS if p.name == name), None)


def matching_preset(text: str, partial: str, background: str) -> str:
    """The name of the preset with these three colours (case-insensitive ``#rrggbb``), else :data:`CUSTOM`."""
    key = tuple(QColor(c).name() for c in (text, partial, background))
    return next((p.name for p in PRESETS if (p.text, p.partial, p.background) == key), CUSTOM)
