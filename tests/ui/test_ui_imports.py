"""The GUI layer never imports a model framework (DESIGN section 1)."""

from __future__ import annotations

import subprocess
import sys


def test_gui_modules_import_no_model_framework():
    code = (
        "import sys, captioner.ui.app, captioner.engine.qt_worker;"
        "bad = [m for m in ('torch', 'tensorflow', 'ai_edge_litert', 'transformers', 'moonshine_voice', 'onnxruntime', 'pipecat') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"}, cwd=".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
