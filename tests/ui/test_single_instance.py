"""One app per user: a second start brings the first window to the front instead of opening another."""

from __future__ import annotations

import pytest

from captioner.ui.single_instance import SingleInstance

pytestmark = pytest.mark.gui


def test_second_guard_fails_and_activates_the_first(qtbot, tmp_path):
    first = SingleInstance(tmp_path)
    assert first.acquire()
    second = SingleInstance(tmp_path)
    with qtbot.waitSignal(first.activated, timeout=5000):
        assert not second.acquire()
    assert second.notified
    first.release()
    third = SingleInstance(tmp_path)  # after a quit the next start is the instance again
    assert third.acquire()
    third.release()


def test_other_directories_do_not_conflict(tmp_path):
    a, b = SingleInstance(tmp_path / "a"), SingleInstance(tmp_path / "b")
    assert a.acquire() and b.acquire()
    assert a.server_name != b.server_name
    a.release()
    b.release()


def test_run_gui_while_running_raises_the_running_window(qtbot, settings, capsys):
    from captioner.paths import config_dir
    from captioner.ui.app import run_gui

    running = SingleInstance(config_dir())  # the "first" app
    assert running.acquire()
    try:
        with qtbot.waitSignal(running.activated, timeout=5000):
            assert run_gui([], settings=settings) == 0  # returns at once, no second window
        assert "already running" in capsys.readouterr().err
    finally:
        running.release()
