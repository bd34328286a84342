"""Render docs/caption-page-obs.png: the caption page over a video frame, as OBS composites a browser source.

The page is served by captioner's own server with a scripted conversation of two speakers (the label
where the speaker changes), photographed by headless Chromium with a transparent default background
(its alpha is the page's), and laid over a synthetic frame (drawn here: no image is downloaded).

    python docs/caption_page_screenshot.py
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PIL import Image, ImageDraw, ImageFilter  # noqa: E402

from captioner.caption_page.address import Bind  # noqa: E402
from captioner.caption_page.hub import CaptionHub  # noqa: E402
from captioner.caption_page.server import CaptionServer  # noqa: E402
from captioner.events import TextDelta, TurnBoundary  # noqa: E402
from tests.browser import chromium, wait_for  # noqa: E402

W, H = 1280, 720


def frame() -> Image.Image:
    """A stand-in video frame: evening sky, hills, a desk and a speaker's silhouette."""
    img = Image.new("RGB", (W, H))
    d = ImageDraw.Draw(img)
    for y in range(H):
        t = y / H
        d.line([(0, y), (W, y)], fill=(int(40 + 180 * t), int(70 + 90 * t), int(140 - 60 * t)))
    d.ellipse([900, 90, 1020, 210], fill=(255, 214, 120))
    d.polygon([(0, 470), (260, 360), (520, 450), (800, 330), (1100, 440), (1280, 380), (1280, 720), (0, 720)],
              fill=(46, 92, 62))
    d.rectangle([0, 600, W, H], fill=(92, 64, 44))
    d.ellipse([560, 250, 720, 410], fill=(30, 30, 40))
    d.rounded_rectangle([480, 390, 800, 640], 60, fill=(30, 30, 40))
    return img.filter(ImageFilter.GaussianBlur(1.2))


def main(out: Path = ROOT / "docs" / "caption-page-obs.png") -> None:
    hub = CaptionHub()
    script = [TextDelta("Welcome back to the stream, everyone.", 0, 2, True, "Meeting", speaker="Speaker 1"),
              TurnBoundary(2.2, source="Meeting"),
              TextDelta("Today we build a bird feeder", 2.5, 4.5, True, "Meeting", speaker="Speaker 2"),
              TextDelta(" out of", 4.5, 5.2, False, "Meeting")]
    for ev in script:
        hub.publish(ev)
    srv = CaptionServer(hub, Bind("127.0.0.1", 0)).start()
    d = chromium(W, H)
    try:
        d.execute_cdp_cmd("Emulation.setDefaultBackgroundColorOverride", {"color": {"r": 0, "g": 0, "b": 0, "a": 0}})
        d.get(srv.url + "?size=44&lines=2&opacity=55")
        wait_for(d, "return document.querySelectorAll('#lines .line').length === 2")
        wait_for(d, "return document.getAnimations().length === 0")  # the lines have rolled up
        time.sleep(0.3)  # fonts settle
        page = Image.open(io.BytesIO(d.get_screenshot_as_png())).convert("RGBA")
    finally:
        d.quit()
        srv.stop()
    shot = frame().convert("RGBA")
    shot.alpha_composite(page.resize(shot.size))
    shot.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)
    print(out, out.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
