"""Typed settings: every key round-trips through the INI file; bad stored values fall back to defaults."""

from __future__ import annotations

import pytest

from captioner.ui.settings import KEYS, Keys, Settings

pytestmark = pytest.mark.gui


def _other_value(key):
    if key.choices:
        return next(c for c in key.choices if c != key.default)
    if key.type is bool:
        return not key.default
    if key.type is int:
        return int(key.maximum) if key.maximum is not None else key.default + 7
    if key.type is float:
        return (key.minimum + key.maximum) / 3 if key.maximum is not None else key.default + 0.5
    if key.type is list:
        return ["changed ✓", "中文, with a comma"]
    return "changed ✓ 中文"


def test_every_key_round_trips(tmp_path):
    path = str(tmp_path / "s.ini")
    first = Settings.from_file(path)
    assert all(first.get(k) == k.default for k in KEYS)
    expected = {k.path: _other_value(k) for k in KEYS}
    for k in KEYS:
        first.set(k, expected[k.path])
    first.sync()
    second = Settings.from_file(path)
    for k in KEYS:
        got = second.get(k)
        assert got == pytest.approx(expected[k.path]) if k.type is float else got == expected[k.path], k.path
        assert type(got) is k.type


def test_paths_are_unique_and_namespaced():
    paths = [k.path for k in KEYS]
    assert len(paths) == len(set(paths))
    assert all("/" in p for p in paths)


def test_bad_stored_values_give_defaults(settings):
    store = settings.store
    store.setValue(Keys.OVERLAY_LINES.path, "banana")
    store.setValue(Keys.CLOCK_MS.path, 100)  # not an operating point
    store.setValue(Keys.OVERLAY_OPACITY.path, 3.5)  # out of range
    store.setValue(Keys.OVERLAY_CLICK_THROUGH.path, "maybe")
    assert settings.get(Keys.OVERLAY_LINES) == 2
    assert settings.get(Keys.CLOCK_MS) == 80
    assert settings.get(Keys.OVERLAY_OPACITY) == 0.7
    assert settings.get(Keys.OVERLAY_CLICK_THROUGH) is False


def test_setting_an_invalid_value_is_refused(settings):
    with pytest.raises(ValueError, match="overlay/lines"):
        settings.set(Keys.OVERLAY_LINES, 9)
    with pytest.raises(ValueError):
        settings.set(Keys.BACKEND, "whisper")


def test_overlay_geometry_per_screen(settings):
    settings.set_overlay_geometry("HDMI-1 1920x1080", (10, 20, 640, 90))
    settings.set_overlay_geometry("eDP-1 1280x800", (0, 700, 1280, 100))
    assert settings.overlay_geometry("HDMI-1 1920x1080") == (10, 20, 640, 90)
    assert settings.overlay_geometry("eDP-1 1280x800") == (0, 700, 1280, 100)
    assert settings.get(Keys.OVERLAY_LAST_SCREEN) == "eDP-1 1280x800"
    assert settings.overlay_geometry("DP-3 3840x2160") is None
    settings.store.setValue("overlay/geometry/bad", "[1, 2]")
    assert settings.overlay_geometry("bad") is None
