"""The user guide stays true: every relative link and image resolves, and docs/cli.md documents
exactly the options (names and defaults) of ``captioner``'s argparse parser, subcommand by
subcommand (issue 41)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from captioner.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: ``[text](target)`` and ``![alt](target)``; a target ends at whitespace or ")".
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
#: What docs/cli.md writes in the default column for "nothing unless given" and a flag that is off.
NO_DEFAULT, OFF = "—", "off"


def links(page: Path) -> list[str]:
    """The link and image targets of a Markdown page, outside fenced code blocks."""
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings (lower case, punctuation dropped, spaces to '-')."""
    found = set()
    for heading in re.findall(r"^#+\s+(.+?)\s*$", FENCE.sub("", page.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")
        found.add(slug)
    return found


def test_the_guide_has_its_pages():
    names = {p.name for p in PAGES}
    assert {"README.md", "cli.md", "performance.md", "troubleshooting.md", "overlay.md", "caption-page.md",
            "hotwords.md", "saving-and-recovering.md", "captioning-a-call.md", "remote-server.md", "tflite.md",
            "settings-and-files.md", "speakers.md", "accessibility.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_image_resolves(page):
    broken = []
    for target in links(page):
        url = urlparse(target)
        if url.scheme or target.startswith("//"):
            continue  # http(s), mailto: not checked offline
        path, _, fragment = unquote(target).partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_images_are_small_pngs():
    images = [t for p in PAGES for t in links(p) if t.endswith(".png")]
    assert images, "the guide shows screenshots"
    for p in (ROOT / "docs" / "images").glob("*.png"):
        assert p.stat().st_size < 200_000, p.name


# -- the CLI reference ---------------------------------------------------------------------------
def documented_options(text: str) -> dict[str, dict[str, str]]:
    """Options of a CLI reference page: ``{"captioner transcribe": {"--backend": "default", ...}}``.

    A section is a ``## captioner [COMMAND]`` heading; each table row under it names its options in
    backticks in the first cell (``--vad-threshold``, ``--turn-threshold``; a positional argument
    by its name, ``audio``) and the default in the second: a backticked value, "off" for a flag,
    or "—" for nothing unless given. Cells are split on unescaped ``|``.
    """
    out: dict[str, dict[str, str]] = {}
    section = None
    for line in FENCE.sub("", text).splitlines():
        m = re.match(r"^## (captioner(?: \w+)?)\s*$", line)
        if m:
            section = out.setdefault(m.group(1), {})
            continue
        if section is None or not line.startswith("| `"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        default = cells[1].strip("`")
        for name in re.findall(r"`([-\w]+)`", cells[0]):
            section[name] = default
    return out


def parser_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Option string (or a positional's dest) -> its action, without -h/--help."""
    out = {}
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        for name in action.option_strings or [action.dest]:
            out[name] = action
    return out


def parsers() -> dict[str, argparse.ArgumentParser]:
    """``"captioner"`` and ``"captioner COMMAND"`` -> its parser."""
    top = build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return {"captioner": top, **{f"captioner {name}": p for name, p in sub.choices.items()}}


def default_matches(documented: str, action: argparse.Action) -> bool:
    """Whether the documented default is argparse's (read through the option's own ``type``)."""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return documented == (OFF if action.default is False else "on")
    if action.default in (None, [], argparse.SUPPRESS):
        return documented == NO_DEFAULT
    convert = action.type if callable(action.type) else str
    try:
        return convert(documented) == action.default
    except (TypeError, ValueError, argparse.ArgumentTypeError):
        return False


def test_documented_options_parse_a_table():
    page = ("## captioner listen\n\n| option | default | what |\n|---|---|---|\n"
            "| `--mic` DEVICE | — | a microphone |\n| `--vad-threshold`, `--turn-threshold` X | `0.5` | a\\|b |\n"
            "| `--no-partials` | off | finals |\n```bash\n| `--fake` | x |\n```\n## captioner recover\n\n"
            "| `journal` | — | number |\n")
    assert documented_options(page) == {"captioner listen": {"--mic": "—", "--vad-threshold": "0.5",
                                                             "--turn-threshold": "0.5", "--no-partials": "off"},
                                        "captioner recover": {"journal": "—"}}


def test_the_cli_reference_matches_argparse():
    documented = documented_options((ROOT / "docs" / "cli.md").read_text(encoding="utf-8"))
    actual = parsers()
    assert set(documented) == set(actual), "one section per subcommand"
    for name, parser in actual.items():
        options = parser_options(parser)
        assert set(documented[name]) == set(options), (
            f"{name}: undocumented {sorted(set(options) - set(documented[name]))}, "
            f"not in argparse {sorted(set(documented[name]) - set(options))}")
        wrong = {opt: (documented[name][opt], action.default) for opt, action in options.items()
                 if not default_matches(documented[name][opt], action)}
        assert not wrong, f"{name}: documented default vs argparse's: {wrong}"


def test_every_subcommand_help_has_an_example():
    for name, parser in parsers().items():
        assert parser.epilog and "captioner" in parser.epilog and "example" in parser.epilog.lower(), name
