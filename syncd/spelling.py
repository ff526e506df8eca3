"""How names and keys are spelled: one normalization, look-alike keys, visible differences.

One person, one key, whatever the spelling. A source may send the same username or
department name in Unicode NFC ("é" as one code point) or NFD ("e" and a combining
accent: macOS and some HR tools export so), in another letter case, or with invisible
characters in it (a zero-width space pasted from a web page, a bidi control from a
right-to-left editor). They look the same on screen and must never make a second record.

- ``nfc``: the one normalization syncd reads, compares and sends text in.
- ``look_alike``: the key two spellings share when they differ only by letter case,
  normalization, invisible characters, the kind of space or compatibility forms (full-width
  letters and digits, ligatures: Unicode NFKC); two usernames or two sibling department
  names with one look-alike key are the same key or a conflict.
- ``invisible``: the invisible characters of a text, named, for a rejection's reason.
- ``shown_pair``: a before and an after that look the same, written so the difference shows.

Pure: no I/O. Every function has an ASCII fast path, since nearly every value is ASCII.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

# Characters that show nothing (Unicode's format characters, category Cf, less the
# "prepended concatenation marks", which print a sign), plus the other invisible
# ones: the combining grapheme joiner, variation selectors, Mongolian free variation
# selectors, the Khmer inherent vowels and the Hangul fillers. Listed rather than found
# by category at import: a scan of every code point costs a fifth of a second.
# tests/unit/test_spelling.py checks the list against unicodedata.
_INVISIBLE_RANGES = (
    "\u00ad"  # soft hyphen
    "\u034f"  # combining grapheme joiner
    "\u061c"  # Arabic letter mark
    "\u115f\u1160"  # Hangul choseong and jungseong fillers
    "\u17b4\u17b5"  # Khmer inherent vowels
    "\u180b-\u180f"  # Mongolian free variation selectors, vowel separator
    "\u200b-\u200f"  # zero-width space, non-joiner, joiner; LRM, RLM
    "\u202a-\u202e"  # bidi embeddings and overrides: LRE, RLE, PDF, LRO, RLO
    "\u2060-\u2064"  # word joiner, invisible operators
    "\u2066-\u206f"  # bidi isolates (LRI, RLI, FSI, PDI), deprecated format characters
    "\u3164"  # Hangul filler
    "\ufe00-\ufe0f"  # variation selectors
    "\ufeff"  # zero-width no-break space (byte order mark)
    "\uffa0"  # halfwidth Hangul filler
    "\ufff9-\ufffb"  # interlinear annotation
    "\U00013430-\U0001343f"  # Egyptian hieroglyph format controls
    "\U0001bca0-\U0001bca3"  # shorthand format controls
    "\U0001d173-\U0001d17a"  # musical symbol format controls
    "\U000e0001"  # language tag
    "\U000e0020-\U000e007f"  # tag characters
    "\U000e0100-\U000e01ef"  # variation selectors supplement
)
INVISIBLE = re.compile(f"[{_INVISIBLE_RANGES}]")
# Joiners that belong to the spelling of words in some scripts (Persian, Indic) and of
# emoji sequences: kept in names, though a look-alike key still ignores them.
JOINERS = frozenset("\u200c\u200d")
# Spaces of other kinds (no-break, ideographic, thin...) look like a plain space.
_SPACES = re.compile(r"[^\S\n\r\t\f\v\x1c-\x1f\x85\u2028\u2029]")
# Conjoining Hangul jamo: a decomposed syllable shows as the composed one.
_JAMO = re.compile("[\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff]")


def nfc(text: str) -> str:
    """The text in Unicode NFC: composed, as syncd compares and sends it."""
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


def look_alike(text: str) -> str:
    """The key of every spelling that looks like this one: invisible characters removed,
    any space a plain space, compatibility forms folded (NFKC: ``ｗｕｈａｏ`` in full-width
    letters, ``E００１０`` in full-width digits, the ``ﬁ`` ligature), letter case folded
    (``"Ren\\u200bE\\u0301e"`` and ``"renée"`` share one, as ``ｗｕｈａｏ`` and ``wuhao``)."""
    if text.isascii():
        return text.casefold()
    # Folding can undo the composition ("ǰ" folds to "j" and a combining caron).
    return nfc(_plain(_as_seen(text)).casefold())


def look_alikes(texts: Sequence[str]) -> list[str]:
    """``look_alike`` of each text, in order. A run keys everyone's username so (100,000
    people, several times): when all of them are ASCII they are folded in one call."""
    joined = "\n".join(texts)
    if joined.isascii():
        folded = joined.casefold()
        if folded == joined:  # as a rule (usernames in lower case): each is its own key
            return list(texts)
        keys = folded.split("\n")
        if len(keys) == len(texts):  # else a text holds the separator: one at a time
            return keys
    return [look_alike(text) for text in texts]


def apart_alike(joined: str) -> bool:
    """Whether the texts joined in ``joined`` (``"".join(texts)``) that differ have
    different ``look_alike`` keys too, as a rule known without making the keys: ASCII
    texts (whose key is the text in lower case) with no upper-case letter, or no
    lower-case one. False when that cannot be told so."""
    if not joined.isascii():
        return False
    return joined.lower() == joined or joined.upper() == joined


def invisible(text: str, *, allowed: frozenset[str] = frozenset()) -> list[str]:
    """The invisible characters in the text, each named (``U+200B ZERO WIDTH SPACE``),
    once each in the order found; those in ``allowed`` are not counted."""
    if text.isascii():
        return []
    found = dict.fromkeys(ch for ch in INVISIBLE.findall(text) if ch not in allowed)
    return [code_point(ch) for ch in found]


# Alphabets whose letters look like Latin ones (UTS #39 mixed-script confusables): a
# username that mixes one of them with Latin letters ("wuh\u0430o", a Cyrillic a) shows as
# another, Latin, username.
_LOOK_LATIN = ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC")


def mixed_scripts(text: str) -> list[str]:
    """The letters of alphabets that look like Latin in a text that has Latin letters too,
    each named (``U+0430 CYRILLIC SMALL LETTER A``) once, in the order found; [] when the
    text is of one alphabet (a Russian username is a username)."""
    if text.isascii():
        return []
    latin, others = False, []
    for ch in dict.fromkeys(text):
        if not ch.isalpha():
            continue
        words = unicodedata.name(ch, "").split()
        latin = latin or ch.isascii() or "LATIN" in words
        if any(word in _LOOK_LATIN for word in words[:2]):
            others.append(ch)
    return [code_point(ch) for ch in others] if latin else []


# Control characters (C0, DEL, C1): never part of an id or a username, whatever the
# source; PostgreSQL cannot even store a NUL in a text column.
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")


def controls(text: str) -> list[str]:
    """The control characters in the text, each named (``U+0000 control character``) once,
    in the order found."""
    if text.isprintable():  # as a rule: checked in C, for every id and username of a read
        return []
    return [f"U+{ord(ch):04X} control character" for ch in dict.fromkeys(CONTROLS.findall(text))]


# The ASCII control characters (C0 and DEL), as bytes: deleted from a text's bytes, they
# leave it as long as it was exactly when it holds none.
_ASCII_CONTROLS = bytes(range(0x20)) + b"\x7f"


def printable_ascii(joined: str) -> bool:
    """Whether every text joined in ``joined`` (``"".join(texts)``) is ASCII without a
    control character, so that none holds a control, an invisible or a look-alike
    character: asked of all of them at once, in C (a read asks it of everyone's ids and
    usernames, joined once, rather than twice a person)."""
    if not joined.isascii():
        return False
    encoded = joined.encode("ascii")
    return len(encoded.translate(None, _ASCII_CONTROLS)) == len(encoded)


def code_point(ch: str) -> str:
    """``U+200B ZERO WIDTH SPACE``."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed character')}"


def looks_the_same(a: str, b: str) -> bool:
    """Whether two different texts show the same on screen: they differ only by
    normalization, invisible characters or the kind of space (letter case shows)."""
    if a == b or (a.isascii() and b.isascii()):
        return False
    return _as_seen(a) == _as_seen(b)


def _as_seen(text: str) -> str:
    """NFC, invisible characters removed, any space a plain space."""
    return _SPACES.sub(" ", INVISIBLE.sub("", nfc(text)))


def _plain(text: str) -> str:
    """Compatibility forms folded to their plain ones (NFKC): full-width and half-width
    letters, digits and signs, ligatures, superscripts, circled and Roman numerals."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    return unicodedata.normalize("NFKC", text)


def spelled(text: str) -> str:
    """The text with what cannot be told apart on screen written as ``\\uXXXX``: invisible
    characters, combining marks, conjoining jamo, characters NFC replaces (U+212B ANGSTROM
    SIGN) and spaces other than the plain one (``'jose\\u0301'``)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(_escape(ch) if _unseen(ch) else ch for ch in text)


def _unseen(ch: str) -> bool:
    if ch.isascii():
        return not ch.isprintable()
    return (
        INVISIBLE.match(ch) is not None
        or unicodedata.category(ch)[0] in "MZC"
        or _JAMO.match(ch) is not None
        or unicodedata.normalize("NFC", ch) != ch
    )


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def difference(a: str, b: str) -> str:
    """What two spellings with one look-alike key differ in, in words: ``letter case``,
    ``invisible characters``, ``full-width or other compatibility forms``, or two or three
    of them (normalization is not a difference: syncd reads in NFC)."""
    seen = (_as_seen(a), _as_seen(b))
    plain = (_plain(seen[0]), _plain(seen[1]))
    found = [
        word
        for word, differs in (
            ("letter case", plain[0] != plain[1]),
            ("invisible characters", seen != (nfc(a), nfc(b))),
            ("full-width or other compatibility forms", plain != seen),
        )
        if differs
    ]
    if not found:
        return "letter case"  # only the normalization: as it always read
    return found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]


def shown_pair(before: str, after: str) -> tuple[str, str]:
    """A before and an after as a message shows them: as they are, unless they look the
    same, when both are ``spelled`` so that the change can be seen."""
    if looks_the_same(before, after):
        return spelled(before), spelled(after)
    return before, after
