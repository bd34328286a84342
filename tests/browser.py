"""A real headless browser for the caption page's tests and benchmark: Debian's ``chromium`` driven
by Selenium through Debian's ``chromium-driver`` (both from scripts/apt-packages.txt; no browser
download). :func:`chromium` skips the test when they are missing, except under CI, where
scripts/test.sh must have installed them."""

from __future__ import annotations

import os
import shutil
import time

import pytest

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
DRIVER = ("chromedriver",)


def _find(names):
    for name in names:
        path = shutil.which(name) or (f"/usr/lib/chromium/{name}" if os.path.exists(f"/usr/lib/chromium/{name}")
                                      else None)
        if path:
            return path
    return None


def chromium(width: int = 960, height: int = 400, resolve: dict | None = None, background=None):
    """A headless Chromium WebDriver.

    Args:
        width, height: window size in CSS pixels.
        resolve: host name -> IP the browser uses instead of DNS (``--host-resolver-rules``),
            to send a foreign Host header to a local server as a DNS-rebinding page would.
        background: ``(r, g, b)`` the browser paints behind the page (as OBS composites a
            browser source over the video), or None for the default white.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver = _find(CHROMIUM), _find(DRIVER)
    if not binary or not driver:
        message = "chromium and chromium-driver are not installed (scripts/test.sh installs them)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--hide-scrollbars", "--force-device-scale-factor=1",
                "--no-first-run", "--disable-background-networking", "--disable-extensions"):
        opts.add_argument(arg)
    if resolve:
        opts.add_argument("--host-resolver-rules=" + ", ".join(f"MAP {h} {ip}" for h, ip in resolve.items()))
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=opts, service=Service(driver))
    if background is not None:
        r, g, b = background
        d.execute_cdp_cmd("Emulation.setDefaultBackgroundColorOverride", {"color": {"r": r, "g": g, "b": b, "a": 1}})
    return d


def wait_for(driver, script: str, deadline: float = 10.0, *args):
    """Poll ``script`` (JavaScript returning a value) until it is truthy; returns it, or fails."""
    end = time.monotonic() + deadline
    value = None
    while time.monotonic() < end:
        value = driver.execute_script(script, *args)
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for: {script} (last value {value!r})")


LINES_JS = """return Array.from(document.querySelectorAll('#lines .line')).map(function (p) {
  return {label: p.querySelector('.label').textContent, final: p.querySelector('.final').textContent,
          partial: p.querySelector('.partial').textContent, turn: p.classList.contains('turn')}; });"""
