"""Issue 13: what is wrong with a model location is said at once, before anything heavy loads
(an empty Audio8 folder showed "Loading…" for 9 s before "config.json is missing")."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


def _choose(win, backend, location):
    win.model_panel.backend_combo.setCurrentIndex(win.model_panel.backend_combo.findData(backend))
    win.model_panel.model_edit.setText(str(location))


def test_an_empty_audio8_folder_is_refused_before_loading(make_window, tmp_path):
    win, record = make_window()
    folder = tmp_path / "empty-checkpoint"
    folder.mkdir()
    _choose(win, "audio8", folder)
    win.start()
    text, severity, code = win.messages.messages()[-1]
    assert code == "config" and "config.json" in text and str(folder) in text
    assert win.engine_state == "idle" and not record["backends"]


def test_a_missing_audio8_folder_is_named(make_window, tmp_path):
    win, record = make_window()
    _choose(win, "audio8", tmp_path / "nowhere")
    win.start()
    text, _, code = win.messages.messages()[-1]
    assert code == "config" and "nowhere" in text and "not found" in text.lower()


def test_random_bytes_are_not_a_tflite_model(make_window, tmp_path):
    win, record = make_window()
    bogus = tmp_path / "model.tflite"
    bogus.write_bytes(b"\x13\x37" * 500)
    _choose(win, "tflite", bogus)
    win.start()
    text, _, code = win.messages.messages()[-1]
    assert code == "config" and "not a TensorFlow Lite model" in text
    assert "pass a .tflite file" not in text
    assert win.engine_state == "idle" and not record["backends"]


def test_a_real_looking_tflite_header_passes_the_check(make_window, tmp_path):
    win, _ = make_window()
    fake = tmp_path / "model.tflite"
    fake.write_bytes(b"\x1c\x00\x00\x00TFL3" + b"\x00" * 64)
    _choose(win, "tflite", fake)
    assert win.model_panel.problem("tflite", str(fake)) == ""
