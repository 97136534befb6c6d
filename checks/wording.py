"""Words in messages: counts with the right plural, "a"/"an", backends as people write them;
names shown as they are, numbers shown only when a reader can use them.

Every message a person reads (findings, command output) says "1 file", "2 files", "an AMD suite",
never "file(s)" or "a amd suite". Every path or name the App writes (Markdown on GitHub, text on a
terminal) goes through `visible`, every amount through `amount`.
"""

from __future__ import annotations

import math
import unicodedata

# How the backends are written in prose (`Backend` values are the register functions' lower-case names).
BACKEND_NAMES = {"cpu": "CPU", "cuda": "CUDA", "rocm": "ROCm", "amd": "AMD", "npu": "NPU", "xpu": "XPU",
                 "musa": "MUSA", "mlx": "MLX"}
# Irregular plurals of the words messages count.
_PLURALS = {"GPU-hours": "GPU-hours", "entry": "entries", "is": "are", "was": "were", "this": "these"}


def plural(n: int | float, word: str, many: str | None = None) -> str:
    """`n word` with the plural form when n is not 1: plural(1, "file") -> "1 file", plural(2, "run") -> "2 runs"."""
    if n == 1:
        return f"{n:g} {word}" if isinstance(n, float) else f"{n} {word}"
    form = many or _PLURALS.get(word) or (word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou"
                                          else word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s"))
    return f"{n:g} {form}" if isinstance(n, float) else f"{n:,} {form}"


def backend_name(value: str) -> str:
    """A backend as prose writes it: "rocm" -> "ROCm", "amd" -> "AMD", an unknown one upper-cased."""
    return BACKEND_NAMES.get(value, value.upper())


# Names said letter by letter whose first letter sounds like a vowel ("an AMD suite", "an NPU suite");
# CPU, CUDA, ROCm ("rock-em") and MUSA take "a".
_AN_NAMES = ("AMD", "NPU", "XPU", "MLX", "HBM", "MI")


def article(phrase: str) -> str:
    """`a phrase` or `an phrase` by its sound: "an AMD suite", "a CUDA suite", "a ROCm suite", "an est_time"."""
    word = phrase.split(" ", 1)[0]
    if word.startswith(_AN_NAMES):
        return f"an {phrase}"
    vowel_sound = word[:1].lower() in "aeio" or (word[:1].lower() == "u" and not word.lower().startswith(("us", "uni")))
    return f"{'an' if vowel_sound else 'a'} {phrase}"


# -- what a reader sees is what the file holds ------------------------------------------------------
# Unicode categories drawn as nothing or as a reordering: format characters (Cf: the bidirectional
# embeddings, overrides and isolates U+202A-202E and U+2066-2069, the marks U+200E/U+200F, zero-width
# spaces and joiners, the soft hyphen, the BOM...), controls (Cc) and the line and paragraph
# separators (Zl, Zp). A right-to-left override in a file name makes its rendering say something
# else than the name ("Trojan Source", CVE-2021-42574).
_INVISIBLE = frozenset({"Cf", "Cc", "Zl", "Zp"})


def visible(text: str) -> str:
    """`text` with every invisible or reordering character written as `<U+XXXX>` (line breaks and
    tabs kept: each writer decides about those): the one escape every writer of paths and names
    calls (code spans, plain Markdown text, annotations, replies, the calibration pull request)."""
    if text.isprintable():  # no character of those categories (nor any other non-printable one)
        return text
    return "".join(f"<U+{ord(ch):04X}>" if ch not in "\n\t" and unicodedata.category(ch) in _INVISIBLE else ch
                   for ch in text)


def has_invisible(text: str) -> bool:
    return visible(text) != text


# -- amounts ----------------------------------------------------------------------------------------
# Past 2**53 a float no longer counts whole units, and infinity or NaN is no amount at all: such a
# value (an est_time of 1e308 s, the GPU-hours it makes) is shown as refused, never printed.
LARGEST_AMOUNT = float(2**53)
REFUSED = "refused (not a usable number)"


def usable(value: float | int) -> bool:
    try:
        v = float(value)
    except (OverflowError, TypeError, ValueError):  # an int past a float's range, or no number
        return False
    return math.isfinite(v) and abs(v) <= LARGEST_AMOUNT


def amount(value: float | int, spec: str = "g", unit: str = "") -> str:
    """`value` formatted with `spec` (and its unit), or REFUSED when it is not finite or past
    LARGEST_AMOUNT: amount(300, unit="s") -> "300 s", amount(float("inf"), ".2f") -> REFUSED."""
    if not usable(value):
        return REFUSED
    return f"{value:{spec}}" + (f" {unit}" if unit else "")


def did_you_mean(name: str, candidates, n: int = 2, cutoff: float = 0.6) -> str:
    """"; did you mean `a` or `b`?" for the nearest spellings of a mistyped name, "" when none is near."""
    import difflib

    near = difflib.get_close_matches(name, sorted(set(candidates)), n=n, cutoff=cutoff)
    return "; did you mean " + " or ".join(f"`{c}`" for c in near) + "?" if near else ""
