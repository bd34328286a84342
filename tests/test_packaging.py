"""Packaging: version, package data, desktop entry / metainfo validity, --install-desktop."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import captioner
from captioner import desktop, resources
from captioner.cli import main

ROOT = Path(__file__).resolve().parent.parent
LINUX = ROOT / "packaging" / "linux"


def test_version_flag_matches_pyproject(capsys):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert captioner.__version__ == project["version"]
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"captioner {project['version']}"


def test_pyproject_licence_is_spdx():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["project"]["license"] == "Apache-2.0"
    req = [r for r in data["build-system"]["requires"] if r.startswith("setuptools")]
    assert req and int(re.search(r">=(\d+)", req[0]).group(1)) >= 77


@pytest.mark.parametrize("name", [
    *(resources.app_icon_png(s) for s in resources.APP_ICON_SIZES),
    *(resources.tray_icon_png(s, a) for s in resources.TRAY_ICON_SIZES for a in (False, True)),
    f"{resources.APP_ID}.svg", "tray.svg", "tray-active.svg", resources.DESKTOP_FILE, resources.METAINFO_FILE,
])
def test_resources_present(name):
    data = resources.read_bytes(name)
    assert data
    if name.endswith(".png"):
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        size = int(re.search(r"-(\d+)\.png$", name).group(1))
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert (width, height) == (size, size)


def test_resources_are_the_top_level_folder_mapped_into_the_package():
    assert not (ROOT / "captioner" / "resources").exists()
    assert Path(resources.__file__).resolve() == (ROOT / "resources" / "__init__.py").resolve()
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert tool["package-dir"]["captioner.resources"] == "resources"
    # a mapped folder is invisible to packages.find, so the packages are listed: none may be missing
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "captioner").rglob("__init__.py")}
    assert on_disk | {"captioner.resources"} == set(tool["packages"])


@pytest.mark.slow
def test_an_installed_package_holds_the_resources(tmp_path):
    """pip builds and installs the project into a folder; the icons and desktop files come with it."""
    src, target = tmp_path / "src", tmp_path / "site"  # a copy: the build leaves build/ and *.egg-info behind
    for part in ("captioner", "resources"):
        shutil.copytree(ROOT / part, src / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, src / part)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--target", str(target), str(src)], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    probe = ("import captioner.resources as r, pathlib; "
             "print(pathlib.Path(r.__file__).parent); print(len(r.read_bytes(r.DESKTOP_FILE)))")
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); {probe}"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    folder, size = out.stdout.split()
    assert Path(folder) == target / "captioner" / "resources"
    assert int(size) == len(resources.read_bytes(resources.DESKTOP_FILE))
    assert len(list(Path(folder).glob("*.png"))) == len(resources.APP_ICON_SIZES) + 2 * len(resources.TRAY_ICON_SIZES)


def test_packaging_linux_links_point_at_the_package_data():
    for name in (resources.DESKTOP_FILE, resources.METAINFO_FILE):
        assert (LINUX / name).read_bytes() == resources.read_bytes(name)


needs_dfv = pytest.mark.skipif(shutil.which("desktop-file-validate") is None,
                               reason="desktop-file-validate (apt desktop-file-utils) missing")
needs_asc = pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstreamcli (apt appstream) missing")


@needs_dfv
def test_desktop_file_validates():
    r = subprocess.run(["desktop-file-validate", str(LINUX / resources.DESKTOP_FILE)], capture_output=True, text=True)
    assert r.returncode == 0 and "error" not in r.stdout + r.stderr, r.stdout + r.stderr


@needs_asc
def test_metainfo_validates():
    r = subprocess.run(["appstreamcli", "validate", "--no-net", "--explain", str(LINUX / resources.METAINFO_FILE)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    text = (LINUX / resources.METAINFO_FILE).read_text(encoding="utf-8")
    for needed in ("<screenshot", "<content_rating", "<release ", f"<launchable type=\"desktop-id\">{resources.DESKTOP_FILE}"):
        assert needed in text
    assert f'<release version="{captioner.__version__}"' in text


@pytest.mark.parametrize("argv, expected", [
    (["{root}/bin/captioner"], "{root}/bin/captioner"),
    (["{root}/my apps/captioner"], '"{root}/my apps/captioner"'),
    (["{root}/bin/python3", "-m", "captioner"], "{root}/bin/python3 -m captioner"),
    (['{root}/a"b$c/x'], '"{root}/a\\"b\\$c/x"'),
    (["{root}/100%/x"], '"{root}/100%%/x"'),
])
def test_exec_value_quoting(argv, expected, tmp_path):
    root = tmp_path.as_posix()  # a real absolute folder of this machine, no spaces or specials of its own
    assert desktop.exec_value([a.format(root=root) for a in argv]) == expected.format(root=root)


def test_launcher_command_uses_this_environment():
    cmd = desktop.launcher_command()
    assert Path(cmd[0]).is_absolute()
    assert cmd[0] == str(Path(sys.executable).with_name("captioner")) or cmd[:3] == [sys.executable, "-m", "captioner"]


@needs_dfv
def test_install_and_uninstall_desktop(tmp_path, monkeypatch, capsys):
    home = tmp_path / "share"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    launcher = (tmp_path / "cap tioner" / "captioner").as_posix()
    monkeypatch.setattr(desktop, "launcher_command", lambda: [launcher])
    assert main(["--install-desktop"]) == 0
    entry = home / "applications" / resources.DESKTOP_FILE
    text = entry.read_text(encoding="utf-8")
    assert f'Exec="{launcher}"' in text and f"Icon={resources.APP_ID}" in text
    r = subprocess.run(["desktop-file-validate", str(entry)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    for s in resources.APP_ICON_SIZES:
        assert (home / "icons" / "hicolor" / f"{s}x{s}" / "apps" / f"{resources.APP_ID}.png").is_file()
    assert (home / "icons" / "hicolor" / "scalable" / "apps" / f"{resources.APP_ID}.svg").is_file()
    assert (home / "metainfo" / resources.METAINFO_FILE).is_file()
    # something of the user's next to it survives the uninstall
    (home / "applications" / "other.desktop").write_text("[Desktop Entry]\n")
    assert main(["--uninstall-desktop"]) == 0
    assert not entry.exists()
    assert [p for p in home.rglob("*") if p.is_file() and resources.APP_ID in p.name] == []
    assert (home / "applications" / "other.desktop").is_file()
    assert main(["--uninstall-desktop"]) == 0
    assert "nothing to remove" in capsys.readouterr().out


def test_install_desktop_rejects_a_subcommand(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert main(["--install-desktop", "devices"]) == 2
    assert not (tmp_path / "applications").exists()


def test_flatpak_manifest_permissions():
    text = (LINUX / f"{resources.APP_ID}.yml").read_text(encoding="utf-8")
    for perm in ("--socket=pulseaudio", "--socket=wayland", "--socket=fallback-x11", "--share=ipc"):
        assert perm in text
    assert f"app-id: {resources.APP_ID}" in text


def test_pyinstaller_spec_mentions_what_it_must_bundle():
    spec = (ROOT / "packaging" / "pyinstaller" / "captioner.spec").read_text(encoding="utf-8")
    for needed in ("moonshine_cpp", "models/base-en", '"onnx"', "NSMicrophoneUsageDescription", "captioner/resources"):
        assert needed in spec
    # the default model runs on the onnxruntime package: no Moonshine runtime library, no second ORT
    assert 'libraries(package_dir("moonshine_cpp")' not in spec and "moonshine_voice.libs" not in spec


def test_metainfo_screenshots_are_in_the_repository():
    text = (LINUX / resources.METAINFO_FILE).read_text(encoding="utf-8")
    shots = re.findall(r"packaging/linux/screenshots/[\w.-]+\.png", text)
    assert shots
    for rel in shots:
        data = (ROOT / rel).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (1280, 800)
