"""Words in messages: counts with the right plural, "a"/"an", backends as people write them.

Every message a person reads (findings, command output) says "1 file", "2 files", "an AMD suite",
never "file(s)" or "a amd suite".
"""

from __future__ import annotations

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


def did_you_mean(name: str, candidates, n: int = 2, cutoff: float = 0.6) -> str:
    """"; did you mean `a` or `b`?" for the nearest spellings of a mistyped name, "" when none is near."""
    import difflib

    near = difflib.get_close_matches(name, sorted(set(candidates)), n=n, cutoff=cutoff)
    return "; did you mean " + " or ".join(f"`{c}`" for c in near) + "?" if near else ""
