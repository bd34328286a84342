"""Regenerate every screenshot of the user guide from the real app, under Xvfb.

    python docs/screenshots.py            (or .venv-test/bin/python docs/screenshots.py)

Starts a private X server (Xvfb, 1280 x 800), a window manager (openbox), an xterm filling the
screen and a compositing manager (xcompmgr), then runs the real app (CaptionerApp: main window,
overlay, caption page, the default model on its engine thread) with espeak-ng speech played through
the file source as if it were live, so every caption is the model's own. While it captions it
photographs the screen with a compositor (translucent overlay), stops the compositor and
photographs it again (opaque overlay cut to its text), opens Settings, and after Stop photographs
the caption page in headless Chromium over a stand-in video frame, as an OBS browser source shows it.

Writes into ``docs/images/`` (quantized PNGs, each under 200 KB): ``overview.png``,
``main-window.png``, ``overlay-compositor.png``, ``overlay-no-compositor.png``, ``settings.png``,
``caption-page-obs.png``, ``overlay-sound.png``, ``overlay-alert.png``. Needs the packages of ``scripts/apt-packages.txt`` (Xvfb, openbox, xterm,
xcompmgr, ImageMagick's ``import``, espeak-ng, chromium, chromium-driver) and the test venv.
Takes about a minute; exits 1 if a picture is missing.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images"
W, H = 1280, 800
SPEECH = ("Good morning everyone, and thank you for joining the call today. "
          "We will start with the quarterly report, and then talk about the new release. "
          "The support team answered twice as many tickets this month.")
#: Said after a telephone ring (:func:`ring`); "Siobhan" is the alert word of the run.
SPEECH_AFTER_RING = ("Sorry, that was my phone. Please send your questions to Siobhan before Friday, "
                     "and we will go through them next week. The next release is planned for the end of March.")
ALERT_WORD = "Siobhan"
#: Give up waiting for captions after this many seconds of playback (and still photograph).
MAX_WAIT_S = 120.0


def quantized(img, colors: int = 160):
    """An RGB PIL image reduced to ``colors`` colours (PNG under 200 KB at these sizes)."""
    from PIL import Image

    return img.convert("RGB").quantize(colors=colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)


def save(img, name: str, colors: int = 160) -> Path:
    """Write ``docs/images/<name>`` quantized, and print its size."""
    path = OUT / name
    quantized(img, colors).save(path, optimize=True)
    print(f"{path.relative_to(ROOT)}: {img.size[0]} x {img.size[1]}, {path.stat().st_size // 1024} KB")
    return path


# -- the desktop ---------------------------------------------------------------------------------
def free_display() -> str:
    """The first X display number from :90 on that nothing uses."""
    for n in range(90, 200):
        if not (os.path.exists(f"/tmp/.X11-unix/X{n}") or os.path.exists(f"/tmp/.X{n}-lock")):
            return f":{n}"
    raise RuntimeError("no free X display number between :90 and :199")


def start_desktop(work: Path) -> tuple[dict, list[subprocess.Popen]]:
    """Xvfb, openbox and a full-screen xterm with some output; returns (environment, processes)."""
    display = free_display()
    procs = [subprocess.Popen(["Xvfb", display, "-screen", "0", f"{W}x{H}x24", "-nolisten", "tcp"])]
    env = {**os.environ, "DISPLAY": display}
    for _ in range(100):
        if subprocess.run(["xwininfo", "-root"], env=env, capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    procs.append(subprocess.Popen(["openbox"], env=env, stderr=subprocess.DEVNULL))
    time.sleep(0.5)
    listing = work / "terminal.txt"
    listing.write_text("$ captioner devices\n" + subprocess.run(
        ["ls", "-l", "/usr/bin"], capture_output=True, text=True).stdout[:6000], encoding="utf-8")
    procs.append(subprocess.Popen(
        ["xterm", "-geometry", f"200x60+0+0", "-bg", "#1e1e2e", "-fg", "#d0d0d0", "-fa", "DejaVu Sans Mono",
         "-fs", "11", "-T", "Terminal", "-e", "sh", "-c", f"cat {listing}; exec sleep 100000"], env=env))
    time.sleep(1.0)
    return env, procs


def ring(seconds: float = 4.0, sample_rate: int = 16000):
    """A UK telephone ring (400 + 450 Hz; 0.4 s on, 0.2 s off, 0.4 s on, 2 s off), ``[n] float32``
    at -20 dBFS: the sound the overlay captions as "[phone ringing]"."""
    import numpy as np

    t = np.arange(int(seconds * sample_rate)) / sample_rate
    tone = 0.05 * (np.sin(2 * np.pi * 400 * t) + np.sin(2 * np.pi * 450 * t))
    phase = t % 3.0
    on = (phase < 0.4) | ((phase >= 0.6) & (phase < 1.0))
    return (tone * on).astype(np.float32)


def speech_file(work: Path) -> Path:
    """espeak-ng reading :data:`SPEECH`, a telephone ring (:func:`ring`), then
    :data:`SPEECH_AFTER_RING`, into one 16 kHz WAV file (real speech for the real model)."""
    import numpy as np
    import soundfile as sf
    import soxr

    parts = []
    for i, text in enumerate((SPEECH, SPEECH_AFTER_RING)):
        raw = work / f"part{i}.wav"
        subprocess.run(["espeak-ng", "-s", "145", "-g", "6", "-w", str(raw), text], check=True)
        audio, rate = sf.read(raw, dtype="float32")
        parts.append(soxr.resample(audio, rate, 16000).astype(np.float32))
    pause = np.zeros(8000, np.float32)
    wav = work / "weekly-meeting.wav"
    sf.write(wav, np.concatenate([parts[0], pause, ring(), pause, parts[1]]), 16000)
    return wav


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="captioner-shots-"))
    env, procs = start_desktop(work)
    try:
        wav = speech_file(work)
        env = {**env, "CAPTIONER_DATA_DIR": str(work / "data"), "CAPTIONER_CONFIG_DIR": str(work / "config"),
               "QT_QPA_PLATFORM": "xcb", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        run = subprocess.run([sys.executable, __file__, "--drive", str(wav), str(work)], env=env, cwd=ROOT,
                             timeout=600)
        if run.returncode != 0:
            print("the app run failed", file=sys.stderr)
            return 1
        return compose(work)
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


# -- the pictures, from what the app run left in the work folder ------------------------------------
def compose(work: Path) -> int:
    """Crop, scale and quantize the raw screenshots into docs/images/."""
    from PIL import Image

    from docs.caption_page_screenshot import frame

    geo = json.loads((work / "geometry.json").read_text(encoding="utf-8"))
    live = Image.open(work / "screen_compositor.png").convert("RGB")
    bare = Image.open(work / "screen_no_compositor.png").convert("RGB")
    save(live.resize((W * 3 // 4, H * 3 // 4), Image.Resampling.LANCZOS), "overview.png", 128)
    x, y, w, h = geo["window_frame"]
    save(live.crop((x, y, x + w, y + h)), "main-window.png")
    x, y, w, h = geo["overlay"]
    box = (max(0, x - 40), max(0, y - 60), min(W, x + w + 40), min(H, y + h + 30))
    save(live.crop(box), "overlay-compositor.png")
    save(bare.crop(box), "overlay-no-compositor.png")
    save(Image.open(work / "settings.png"), "settings.png")
    for shot_name, key, name in (("screen_sound.png", "sound", "overlay-sound.png"),
                                 ("screen_alert.png", "overlay_alert", "overlay-alert.png")):
        x, y, w, h = geo[key]
        shot = Image.open(work / shot_name).convert("RGB")
        save(shot.crop((max(0, x - 40), max(0, y - 60), min(W, x + w + 40), min(H, y + h + 30))), name)
    page = Image.open(work / "page.png").convert("RGBA")
    shot = frame().convert("RGBA")
    shot.alpha_composite(page.resize(shot.size))
    save(shot, "caption-page-obs.png", 128)
    print(json.dumps({"overlay_text": geo["overlay_text"], "transcript": geo["transcript"][:400]}, indent=1))
    big = [p.name for p in OUT.glob("*.png") if p.stat().st_size > 200_000]
    if big:
        print("over 200 KB:", big, file=sys.stderr)
    return 1 if big else 0


# -- the app run (a child process on the Xvfb display) ---------------------------------------------
def drive(wav: str, work: Path) -> int:
    """Run the real app on ``wav`` and leave raw screenshots and geometry.json in ``work``."""
    compositor = subprocess.Popen(["xcompmgr"])
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from captioner.caption_page.address import free_port_near
    from captioner.ui.app import CaptionerApp
    from captioner.ui.settings import Keys, Settings
    from captioner.ui.settings_dialog import SettingsDialog

    app = QApplication(sys.argv[:1])
    settings = Settings.from_file(str(work / "captioner.ini"))
    for key, value in ((Keys.SOURCE_MODE, "file"), (Keys.FILE, wav), (Keys.FILE_LABEL, "Meeting"),
                       (Keys.BACKEND, "default"), (Keys.OVERLAY_LINES, 2), (Keys.OVERLAY_FONT_SIZE, 24),
                       (Keys.OVERLAY_OPACITY, 0.6), (Keys.PAGE_ENABLED, True), (Keys.ALERT_WORDS, [ALERT_WORD]),
                       (Keys.PAGE_PORT, free_port_near("127.0.0.1", 47650) or 47650)):
        settings.set(key, value)
    gui = CaptionerApp(settings)
    gui.window.move(30, 30)
    gui.window.resize(700, 560)
    gui.show()
    gui.overlay.restore_geometry()
    t0 = time.monotonic()
    state: dict = {"step": "wait"}
    geo: dict = {}

    def root_shot(name: str) -> None:
        app.processEvents()
        subprocess.run(["import", "-window", "root", str(work / name)], check=True)

    def poll() -> None:
        elapsed = time.monotonic() - t0
        step = state["step"]
        if "sound" not in geo and "[phone ringing]" in gui.overlay.visible_text():
            root_shot("screen_sound.png")  # the ring's caption on the overlay, whichever step this is
            o = gui.overlay.geometry()
            geo["sound"] = [o.x(), o.y(), o.width(), o.height()]
        if step == "wait":
            lines = gui.overlay.visible_lines()
            finals = sum(1 for seg in gui.window.recorder.transcript.segments if not seg.sound)
            if (finals >= 2 and any(v.partial for v in lines)) or elapsed > MAX_WAIT_S:
                root_shot("screen_compositor.png")
                f, o = gui.window.frameGeometry(), gui.overlay.geometry()
                geo.update(window_frame=[f.x(), f.y(), f.width(), f.height()],
                           overlay=[o.x(), o.y(), o.width(), o.height()], overlay_text=gui.overlay.visible_text())
                compositor.terminate()  # the overlay notices within 2 s (overlay_shape.COMPOSITING_RECHECK_S)
                compositor.wait(5)
                state.update(step="bare", at=elapsed)
        elif step == "bare" and elapsed - state["at"] > 3.0:
            gui.overlay.update()
            QTimer.singleShot(300, lambda: root_shot("screen_no_compositor.png"))
            state["step"] = "settings"
        elif step == "settings" and (work / "screen_no_compositor.png").exists():
            dialog = SettingsDialog(settings, gui.window, shortcut_status=gui.window.shortcuts.status(),
                                    caption_page=gui.caption_page)
            dialog.show()
            app.processEvents()
            dialog.grab().save(str(work / "settings.png"))
            dialog.close()
            photograph_page(gui.caption_page.url, work / "page.png")  # still captioning: a live tail
            state["step"] = "alert"
        elif step == "alert" and (gui.overlay.alert_text() or elapsed > MAX_WAIT_S):
            root_shot("screen_alert.png")  # the alert banner, and the ring's caption above the words
            o = gui.overlay.geometry()
            geo.update(overlay_alert=[o.x(), o.y(), o.width(), o.height()], alert=gui.overlay.alert_text(),
                       overlay_alert_text=gui.overlay.visible_text())
            state["step"] = "end"
        elif step == "end" and (elapsed > MAX_WAIT_S or any(
                code == "source_ended" for _, _, code in gui.window.messages.messages())):
            gui.window.stop()  # the file has been played: Stop keeps its last words
            state["step"] = "stopping"
        elif step == "stopping" and gui.window.engine_state == "idle":
            timer.stop()
            geo["transcript"] = gui.window.transcript_view.toPlainText()
            (work / "geometry.json").write_text(json.dumps(geo), encoding="utf-8")
            app.quit()

    timer = QTimer()
    timer.setInterval(100)
    timer.timeout.connect(poll)
    timer.start()
    QTimer.singleShot(0, gui.window.start)
    app.aboutToQuit.connect(gui.shutdown)
    app.exec()
    if compositor.poll() is None:
        compositor.terminate()
    return 0 if (work / "geometry.json").exists() else 1


def photograph_page(url: str, out: Path) -> None:
    """The app's caption page in OBS style (2 lines, 44 px, 55 % box) over a transparent background."""
    from PIL import Image

    from tests.browser import chromium, wait_for

    d = chromium(1280, 720)
    try:
        d.execute_cdp_cmd("Emulation.setDefaultBackgroundColorOverride", {"color": {"r": 0, "g": 0, "b": 0, "a": 0}})
        d.get(url + "?size=44&lines=2&opacity=55")
        wait_for(d, "return document.querySelectorAll('#lines .line').length >= 1")
        time.sleep(0.5)  # web fonts settle (a picture, not a synchronisation)
        wait_for(d, "return document.getAnimations().length === 0")  # the lines have rolled into place
        Image.open(io.BytesIO(d.get_screenshot_as_png())).save(out)
    finally:
        d.quit()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--drive":
        sys.path.insert(0, str(ROOT))
        sys.exit(drive(sys.argv[2], Path(sys.argv[3])))
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
