"""Every program a test runs comes from ``scripts/apt-packages.txt`` (issue 9 item 1).

A test that calls a tool installed by hand on a development machine passes there and
fails on a fresh one (``convert: unable to read font 'helvetica'``). This test finds
the external programs the test suite runs, checks each is mapped to a package in the
list, checks with ``dpkg -S`` that the mapping is true where dpkg exists, and in CI
(``CI=true``) checks every one is installed, so a test can never silently skip there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: program -> (package named in apt-packages.txt, package that owns the file per dpkg)
TOOLS = {
    "Xvfb": ("xvfb", "xvfb"),
    "xvfb-run": ("xvfb", "xvfb"),
    "xauth": ("xauth", "xauth"),
    "xcompmgr": ("xcompmgr", "xcompmgr"),
    "xwininfo": ("x11-utils", "x11-utils"),
    "import": ("imagemagick", "imagemagick-6.q16"),
    "display": ("imagemagick", "imagemagick-6.q16"),
    "espeak-ng": ("espeak-ng", "espeak-ng"),
    "pulseaudio": ("pulseaudio", "pulseaudio"),
    "pactl": ("pulseaudio-utils", "pulseaudio-utils"),
    "paplay": ("pulseaudio-utils", "pulseaudio-utils"),
    "sox": ("sox", "sox"),
    "openssl": ("openssl", "openssl"),
    "desktop-file-validate": ("desktop-file-utils", "desktop-file-utils"),
    "appstreamcli": ("appstream", "appstream"),
    "openbox": ("openbox", "openbox"),
    "xdotool": ("xdotool", "xdotool"),
    "xterm": ("xterm", "xterm"),
    "xprop": ("x11-utils", "x11-utils"),
    "dbus-daemon": ("dbus-daemon", "dbus-daemon"),
}
#: shell built-ins and coreutils the scripts use (always present on Debian)
BASE = {"bash", "cd", "echo", "export", "for", "if", "mkdir", "set", "sleep", "trap", "kill", "rm", "seq",
        "timeout", "cp", "realpath", "dirname", "mktemp", "sha256sum", "cut", "grep", "awk", "tr", "cat", "python3"}


def apt_packages() -> dict[str, str]:
    out = {}
    for line in (ROOT / "scripts" / "apt-packages.txt").read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#"):
            out[parts[1]] = parts[0]
    return out


def programs_used() -> set[str]:
    """Programs named in the tests: which(...), TOOLS/REQUIRED tuples, argv lists, shell script lines."""
    found: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        if path.name == Path(__file__).name or "fixtures" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        found.update(re.findall(r"which\([\"']([\w.+-]+)[\"']\)", text))
        for tup in re.findall(r"(?:TOOLS|REQUIRED) = \(([^)]*)\)", text):
            found.update(re.findall(r"[\"']([\w.+-]+)[\"']", tup))
        found.update(re.findall(r"subprocess\.\w+\(\s*\[\s*[\"']([\w.+-]+)[\"']", text))
    for script in (ROOT / "tests").glob("*.sh"):
        previous = ""
        for line in script.read_text().splitlines():
            continued, previous = previous.rstrip().endswith("\\"), line
            if continued or line.lstrip().startswith("#"):
                continue
            m = re.match(r"\s*(?:[A-Z_]+=\S+\s+)*([a-zA-Z][\w.+-]*)\s", line)
            if m:
                found.add(m.group(1))
    return found - BASE - {"sys", "PY"}


def test_every_program_a_test_runs_is_in_the_apt_list():
    listed = apt_packages()
    used = programs_used()
    assert {"espeak-ng", "Xvfb", "import", "pactl"} <= used  # the scan itself works
    unknown = sorted(used - set(TOOLS))
    assert not unknown, f"tests run {unknown}: map them in TOOLS and add their package to scripts/apt-packages.txt"
    for tool in sorted(used):
        package = TOOLS[tool][0]
        assert listed.get(package) == "test" or listed.get(package) == "run", f"{tool}: {package} not in apt-packages.txt"
    assert listed.get("xvfb") and listed.get("xauth")  # scripts/test.sh runs xvfb-run


@pytest.mark.skipif(shutil.which("dpkg") is None, reason="dpkg (Debian) only")
def test_mapping_matches_the_installed_packages():
    for tool, (_, owner) in TOOLS.items():
        exe = shutil.which(tool)
        if exe is None:
            continue
        res = subprocess.run(["dpkg", "-S", os.path.realpath(exe)], capture_output=True, text=True)
        if res.returncode != 0:  # installed by other means (pip, a venv): not the package we name
            pytest.fail(f"{tool} at {exe} is not from a Debian package; tests must use {owner}'s")
        assert res.stdout.split(":")[0] == owner, (tool, res.stdout)


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="CI installs every listed package")
def test_ci_has_every_program_so_nothing_skips():
    missing = [t for t in sorted(programs_used()) if shutil.which(t) is None]
    assert not missing, f"CI lacks {missing}: scripts/test.sh must install them from apt-packages.txt"
