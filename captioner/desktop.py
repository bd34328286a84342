"""``captioner --install-desktop`` / ``--uninstall-desktop``: the app in the user's Linux menu.

Copies the packaged desktop entry (with ``Exec`` pointing at *this* captioner: the frozen
binary, the virtual environment's ``captioner`` script, or ``python -m captioner``), the
AppStream metainfo and the icons (every PNG size plus the SVG) into the XDG data home
(``$XDG_DATA_HOME``, default ``~/.local/share``). Nothing needs root; uninstalling removes
exactly those files. Transcripts, journals and settings are never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from captioner import resources
from captioner.resources import APP_ICON_SIZES, APP_ID, DESKTOP_FILE, METAINFO_FILE

#: Characters that must be backslash-escaped inside a quoted Exec argument (Desktop Entry spec).
_EXEC_ESCAPE = '"`$\\'
_EXEC_RESERVED = set(' \t\n"\'\\><~|&;$*?#()`')


def data_home(env: dict[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME`` (when absolute) or ``~/.local/share``."""
    env = os.environ if env is None else env
    value = env.get("XDG_DATA_HOME", "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / ".local" / "share"


def launcher_command() -> list[str]:
    """The command that starts this very captioner (argv form)."""
    exe = Path(sys.executable)
    if getattr(sys, "frozen", False):  # PyInstaller bundle: the binary itself
        return [str(exe.resolve())]
    script = exe.with_name("captioner.exe" if os.name == "nt" else "captioner")
    if script.is_file():  # the entry point pip installed next to this interpreter
        return [str(script)]
    return [str(exe), "-m", "captioner"]


def exec_value(argv: list[str]) -> str:
    """``argv`` as a Desktop Entry ``Exec`` value (quoted and escaped as the spec asks)."""
    parts = []
    for arg in argv:
        if arg and not (set(arg) & _EXEC_RESERVED) and "%" not in arg and "=" not in arg:
            parts.append(arg)
            continue
        escaped = "".join("\\" + c if c in _EXEC_ESCAPE else c for c in arg).replace("%", "%%")
        parts.append(f'"{escaped}"')
    return " ".join(parts)


def desktop_entry(argv: list[str] | None = None) -> str:
    """The packaged desktop entry with ``Exec`` (and ``TryExec``) set to ``argv``."""
    argv = argv or launcher_command()
    lines = []
    for line in resources.read_bytes(DESKTOP_FILE).decode("utf-8").splitlines():
        if line.startswith("Exec="):
            line = "Exec=" + exec_value(argv)
            if Path(argv[0]).is_absolute():
                lines.append(line)
                line = "TryExec=" + exec_value(argv[:1])
        lines.append(line)
    return "\n".join(lines) + "\n"


def installed_files(home: Path | None = None) -> list[Path]:
    """Every file :func:`install` writes, under ``home`` (default :func:`data_home`)."""
    home = home or data_home()
    icons = home / "icons" / "hicolor"
    files = [home / "applications" / DESKTOP_FILE, home / "metainfo" / METAINFO_FILE]
    files += [icons / f"{s}x{s}" / "apps" / f"{APP_ID}.png" for s in APP_ICON_SIZES]
    files.append(icons / "scalable" / "apps" / f"{APP_ID}.svg")
    return files


def _refresh_caches(home: Path) -> None:
    """Tell the desktop about new or removed entries/icons (best effort: the tools are optional)."""
    calls = [("update-desktop-database", ["-q", str(home / "applications")])]
    if (home / "icons" / "hicolor" / "icon-theme.cache").is_file():  # refresh a cache, never create one
        calls.append(("gtk-update-icon-cache", ["-q", "-t", "-f", str(home / "icons" / "hicolor")]))
    for tool, args in calls:
        path = shutil.which(tool)
        if path:
            subprocess.run([path, *args], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def install(home: Path | None = None, argv: list[str] | None = None) -> list[Path]:
    """Write the desktop entry, metainfo and icons; returns the files written."""
    home = home or data_home()
    files = installed_files(home)
    contents: list[bytes] = [desktop_entry(argv).encode("utf-8"), resources.read_bytes(METAINFO_FILE)]
    contents += [resources.read_bytes(resources.app_icon_png(s)) for s in APP_ICON_SIZES]
    contents.append(resources.read_bytes(f"{APP_ID}.svg"))
    for path, data in zip(files, contents):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    _refresh_caches(home)
    return files


def uninstall(home: Path | None = None) -> list[Path]:
    """Remove what :func:`install` wrote; returns the files that were there."""
    home = home or data_home()
    removed = []
    for path in installed_files(home):
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed.append(path)
    _refresh_caches(home)
    return removed


def _unsupported() -> str:
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return ""
    return ("captioner: --install-desktop is for Linux desktops. On Windows and macOS install the "
            "bundle from the release page (see README, 'Install').")


def run_install() -> int:
    """CLI: ``captioner --install-desktop``."""
    problem = _unsupported()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    try:
        files = install()
    except OSError as exc:
        print(f"captioner: could not install the menu entry: {exc}", file=sys.stderr)
        return 1
    command = exec_value(launcher_command())
    print(f"captioner is now in your applications menu ({files[0]}).\n"
          f"It starts: {command}\n"
          f"Remove it again with: {command} --uninstall-desktop")
    return 0


def run_uninstall() -> int:
    """CLI: ``captioner --uninstall-desktop``."""
    problem = _unsupported()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    try:
        removed = uninstall()
    except OSError as exc:
        print(f"captioner: could not remove the menu entry: {exc}", file=sys.stderr)
        return 1
    if removed:
        print(f"Removed captioner from your applications menu ({len(removed)} files). "
              "Your transcripts, journals and settings are kept.")
    else:
        print("captioner was not in your applications menu; nothing to remove.")
    return 0
