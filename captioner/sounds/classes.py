"""Which AudioSet classes become which sound caption, and when (issue 49).

A curated set of YAMNet's 521 AudioSet classes, grouped under short caption words a deaf reader
needs ("[phone ringing]", "[siren]", "[music]", ...). Speech, singing, crowd chatter and the
other voice classes are never mapped: speech is what the captions already carry.

A label's score on a patch is the highest probability among its classes (``combine="max"``) or,
for labels whose evidence is split between sibling classes, ``1 - prod(1 - p)`` (``"any"``). The
model's output is quantised (``p = sigmoid(0.7565417 * (q - 190))``), so the only values a class
gives near the thresholds are 0.094, 0.180, 0.319, 0.500, 0.681, 0.820, 0.906, 0.954, 0.978,
0.989 (q = 187 .. 196): ``0.5`` means q >= 190, ``0.6`` q >= 191, ``0.8`` q >= 192, ``0.9``
q >= 193, ``0.95`` q >= 194, ``0.98`` q >= 196; ``off = 0.15`` (q <= 187) counts as absent.

Where the values come from: ``bench/sounds.py`` (``bench/results/sounds.json``, ``docs/sounds.md``),
fitted on the *fit* half of its recordings only (``Clip.split`` / ``Everyday.split`` in
``bench/sound_clips.py``) and checked on the *held-out* half. No label may caption any speech-only
set (espeak-ng ``set1``-``set4``, the natural-voice corpus ``nat4``, ``nat6quick``, ``nat12blend``,
``nat_backchannel``, the 20-minute ``nat_meeting``, three real recordings; 35 min), and as few as
the events allow of 105 everyday sounds (engines, animals, tools, a cash till, desktop and phone
notification sounds, voice-pack exclamations, footsteps):

* the defaults, *on* 0.5 for two patches in a row (0.96 s each, 0.48 s apart) and *instant* 0.95
  for one patch: no label passed 0.022 two-in-a-row on speech; the everyday sounds' highest
  single patches are 0.906 ("dog barking" on monkeys) and their pairs 0.319, except for the labels
  below. *instant* 0.8 (siren, applause, car horn) where everyday sounds stayed at or under 0.681;
* **phone ringing** ``need=3``, ``on=0.6``, no *instant*: desktop notification sounds (lomiri
  "Slick", "Rhodes"), a cash register, a beep and Morse code score "Telephone" 0.82-0.99 for one
  or two patches; a ring lasts longer. Three patches in a row at >= 0.681 kept every ring but a
  UK dual tone under speech and dropped those five; a telephone busy tone (480+620 Hz) is still
  captioned (it scores like the dual-tone rings: 0.98 three in a row);
* **music** ``on=0.6``, ``instant=0.98``: short notification jingles scored "Music" 0.82-0.95 for
  one or two patches (11 of the everyday sounds were captioned ``[music]`` at 0.5 / 0.8). 0.68 two
  in a row or 0.98 on one patch drop 5 of them and keep every music event of the fit half, 0.5 s
  later (0.8-1.3 s after its start when the talk pauses); a gong, a smithy's hammer, a
  notification, a sound effect and two desktop login jingles (2-3 s of music) are still
  captioned. Stricter rules (0.9 two in a row, or four patches in a row) drop one to four more but
  caption music under speech 2-9 s late;
* **laughter** ``combine="any"``, ``on=0.4``, ``instant=0.6``: laughs split their probability
  between "Laughter", "Giggle", "Snicker" and "Belly laugh" (0.3-0.8 each); combined they reach
  0.6-0.9 on one patch of a laugh. Everyday sounds reached 0.42 (a cough) on one patch and 0.12
  two in a row, speech 0.035 and 0.003. Many voice-acted laughs score as "Speech" (0.9+): they
  are not found;
* **glass breaking** adds "Breaking" (AudioSet's parent of "Shatter"), ``instant=0.6``: breaking
  glass is 0.4-0.6 s, one or two patches, "Breaking" 0.5-0.82 and "Shatter" 0.68 where "Shatter"
  alone rarely passes 0.5; everyday sounds reached 0.319 (an axe on wood) on one patch;
* **alarm** stays at the defaults: a beeping alarm clock scores "Beep, bleep" 0.5-0.95, which a
  cash till reaches as well (0.95 two patches in a row); "Alarm" itself passes 0.5 two in a row
  only for rings, sirens and phone tones here (``yields_to``);
* *off* / *hold_s*: the sound has stopped once its score stays under ``off`` for ``hold_s``
  seconds; then a new start is captioned again. A phone rings with pauses of up to 4 s (the US
  cadence: 2 s on, 4 s off), an alarm or a siren can fall silent for seconds, and music under
  speech dips for a line or two (``off`` 0.07 for music): every benchmark event was captioned
  exactly once;
* *yields_to*: a generic label stands back while a more specific one is present (AudioSet's
  "Alarm" is the parent of telephones, sirens and doorbells and fires with each of them; a
  melodic ringtone scores as "Music" and is captioned ``[music]``).

"knocking", "doorbell", "door", "baby crying" keep the defaults: no recording of them that a
package ships was recognised at a threshold that spared the everyday sounds (door: a truck
breaking down and falling objects score "Door" as high as doors do; doorbell: a game-show bell
scores "Doorbell" 0.95; no knock or baby recording).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SoundClass:
    """One caption word and the AudioSet classes that raise it.

    Attributes:
        label: the caption word(s) without brackets ("phone ringing").
        classes: AudioSet display names (``yamnet_class_map.csv``), any of which counts.
        on: probability two patches in a row must reach to caption a start.
        off: the score under which the sound counts as absent.
        hold_s: seconds the score must stay under ``off`` before the sound counts as stopped.
        yields_to: labels that, when present (score at or over their ``off``, or captioned and not
            stopped), keep this one from starting.
        instant: a single patch at or over this captions at once, 0.48 s sooner (``None``:
            never; ``need`` patches in a row are needed).
        need: patches in a row (0.48 s apart) that must reach ``on`` to caption a start (2: the
            sound lasted about 1.4 s; 3: about 1.9 s).
        combine: how a patch's class probabilities make the label's score: ``"max"`` (the
            highest) or ``"any"`` (the probability that at least one class is present if they
            were independent, ``1 - prod(1 - p)``: evidence split between sibling classes, such as
            "Laughter" and "Giggle", adds up; never below ``"max"``).
    """

    label: str
    classes: tuple[str, ...]
    on: float = 0.5
    off: float = 0.15
    hold_s: float = 4.0
    yields_to: tuple[str, ...] = ()
    instant: float | None = 0.95
    need: int = 2
    combine: str = "max"


#: The captioned sounds, in the order captions of one patch are given.
SOUNDS: tuple[SoundClass, ...] = (
    SoundClass("phone ringing", ("Telephone bell ringing", "Ringtone", "Telephone"), on=0.6, need=3, hold_s=8.0,
               instant=None),
    SoundClass("siren", ("Siren", "Civil defense siren", "Police car (siren)", "Ambulance (siren)",
                         "Fire engine, fire truck (siren)"), hold_s=8.0, instant=0.8),
    SoundClass("doorbell", ("Doorbell", "Ding-dong"), hold_s=6.0),
    SoundClass("alarm", ("Alarm", "Alarm clock", "Smoke detector, smoke alarm", "Fire alarm", "Buzzer",
                         "Car alarm"), hold_s=8.0, instant=0.8, yields_to=("phone ringing", "siren", "doorbell")),
    SoundClass("knocking", ("Knock",)),
    SoundClass("dog barking", ("Dog", "Bark", "Yip", "Howl", "Bow-wow"), hold_s=6.0),
    SoundClass("baby crying", ("Baby cry, infant cry",), hold_s=6.0),
    SoundClass("applause", ("Applause", "Clapping", "Cheering"), instant=0.8),
    SoundClass("laughter", ("Laughter", "Baby laughter", "Giggle", "Snicker", "Belly laugh", "Chuckle, chortle"),
               on=0.4, instant=0.6, combine="any"),
    SoundClass("glass breaking", ("Shatter", "Breaking"), instant=0.6),
    SoundClass("door", ("Door", "Slam"), on=0.6, yields_to=("knocking",)),
    SoundClass("car horn", ("Vehicle horn, car horn, honking", "Air horn, truck horn"), instant=0.8),
    SoundClass("music", ("Music",), on=0.6, off=0.07, hold_s=6.0, instant=0.98,
               yields_to=("phone ringing", "doorbell")),
)


def resolve(sounds: tuple[SoundClass, ...], names: list[str]) -> list[list[int]]:
    """The output indices of each sound's classes.

    Args:
        sounds: the sound classes (:data:`SOUNDS`).
        names: the model's class display names in output order (521).

    Returns:
        one list of indices per sound, in ``sounds`` order.

    Raises:
        ValueError: a class name is not in ``names`` (a different class list).
    """
    where = {n: i for i, n in enumerate(names)}
    missing = [c for s in sounds for c in s.classes if c not in where]
    if missing:
        raise ValueError(f"the class list lacks {missing}")
    return [[where[c] for c in s.classes] for s in sounds]


__all__ = ["SOUNDS", "SoundClass", "resolve"]
