"""PyInstaller runtime hook (Linux): let sounddevice find the bundled PortAudio when the system has none.

sounddevice looks PortAudio up with ``ctypes.util.find_library("portaudio")``, which on Linux only
sees the system's libraries, and has no bundled fallback there (it has one on Windows and macOS).
The bundle carries the build machine's ``libportaudio.so.2``; the system's copy still wins when
there is one (it matches the system's ALSA/PulseAudio setup).
"""

import ctypes.util
import os
import sys

if sys.platform.startswith("linux") and getattr(sys, "frozen", False):
    _bundled = os.path.join(sys._MEIPASS, "libportaudio.so.2")
    _find_library = ctypes.util.find_library

    def _find_library_with_bundle(name):
        found = _find_library(name)
        if found is None and name == "portaudio" and os.path.isfile(_bundled):
            return _bundled
        return found

    ctypes.util.find_library = _find_library_with_bundle
