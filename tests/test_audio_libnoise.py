"""Library noise (PortAudio/ALSA lines written to fd 2) goes to the log, in ``listen`` and in the GUI."""

import os
import subprocess
import sys

GUI_SCRIPT = r"""
import logging, os, sys
sys.path.insert(0, {root!r})
logging.basicConfig(filename={log!r}, level=logging.INFO)
import captioner.ui.app as app
def fake_gui(*a, **k):  # what the libraries do while the GUI runs: write straight to descriptor 2
    os.write(2, b"ALSA lib pulse.c:242:(pulse_connect) PulseAudio: Unable to connect: Connection refused\n")
    os.write(2, b"Expression 'ret' failed in 'src/hostapi/alsa/pa_linux_alsa.c', line: 1736\n")
    os.write(2, b"a real message\n")
    print("python stderr kept", file=sys.stderr)
    return 0
app.run_gui = fake_gui
from captioner import cli
code = cli.main([])
assert "torch" not in sys.modules and "tflite_runtime" not in sys.modules, "GUI start imported an ML runtime"
sys.exit(code)
"""


def test_gui_entry_point_routes_library_noise_to_the_log(tmp_path):
    """``captioner`` (the GUI) filters fd 2 like ``listen``; a line written just before exit still arrives."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    log = tmp_path / "log.txt"
    proc = subprocess.run([sys.executable, "-c", GUI_SCRIPT.format(root=root, log=str(log))],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "a real message" in proc.stderr and "python stderr kept" in proc.stderr
    assert "ALSA lib" not in proc.stderr and "pa_linux_alsa" not in proc.stderr
    logged = log.read_text(encoding="utf-8")
    assert "audio library: ALSA lib pulse.c:242" in logged and "pa_linux_alsa.c" in logged


def test_an_abandoned_audio_call_is_not_printed_on_the_terminal():
    """A frozen sound server: the source tells the user; the abandoned call is a log detail, not a
    terminal line (Python's last-resort handler printed the warning in ``listen``)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = (f"import sys, threading; sys.path.insert(0, {root!r})\n"
              "from captioner.audio.abandon import CallTimeout, call_with_timeout\n"
              "release = threading.Event()\n"
              "try:\n    call_with_timeout(release.wait, 0.05, 'abort')\nexcept CallTimeout:\n    print('timed out')\n"
              "release.set()\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.stdout == "timed out\n" and proc.stderr == "", proc.stderr
