"""Whether an answer says anything at all, judged without a model call.

An answer has content when `text.has_content` finds a letter or digit outside JSON
syntax (so `},` and `...` do not count, and a CJK answer does) and it is not a
refusal: a whole answer such as "Unknown", or a short one that begins "I don't know"
/ "I cannot determine" with nothing contrasting after it; nor is a copy of the prompt
the model was shown (ECHO_WORDS consecutive words of it). The phrases are data
(`refusals.toml` beside this module), matched on a normalized form of the answer.
Used where an answer would otherwise be accepted unjudged: a direct answer at step 1
and Beast Mode's forced answer.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path
from typing import NamedTuple

from deepsearch.text import has_content, word_count

REFUSALS_FILE = Path(__file__).with_name("refusals.toml")
# An answer sharing this many consecutive words with the prompt copies it.
ECHO_WORDS = 12
# Markdown and punctuation become spaces; apostrophes are kept ("don't").
_NOISE = re.compile(r"[^\w\s']+")


class Refusals(NamedTuple):
    whole: frozenset[str]
    starts: tuple[str, ...]
    max_words: int
    contrast: frozenset[str]


@cache
def refusals() -> Refusals:
    with REFUSALS_FILE.open("rb") as file:
        data = tomllib.load(file)
    return Refusals(
        whole=frozenset(normalized(p) for p in data["whole"]),
        starts=tuple(normalized(p) for p in data["starts"]),
        max_words=int(data["max_words"]),
        contrast=frozenset(normalized(p) for p in data["contrast"]),
    )


def normalized(text: str) -> str:
    """Lowercased, ’ as ', markdown and punctuation dropped, whitespace collapsed."""
    text = text.lower().replace("\u2019", "'").replace("`", " ")
    return " ".join(_NOISE.sub(" ", text).replace("_", " ").split())


def is_refusal(answer: str) -> bool:
    """The answer only says that no answer is known (see the module doc)."""
    text = normalized(answer)
    table = refusals()
    if text in table.whole:
        return True
    start = next((p for p in table.starts if text.startswith(p)), None)
    if start is None or word_count(text) > table.max_words:
        return False
    rest = text[len(start) :]
    return not any(word in table.contrast for word in rest.split()) and not any(
        word in rest for word in table.contrast if not word.isascii()
    )


def copies(answer: str, source: str, *, words: int = ECHO_WORDS) -> bool:
    """The answer repeats `words` consecutive words of `source` (the prompt the model
    was shown): a model that echoes its instructions has answered nothing."""
    said = normalized(answer).split()
    if len(said) < words or not source:
        return False
    shown = f" {' '.join(normalized(source).split())} "
    return any(f" {' '.join(said[i : i + words])} " in shown for i in range(len(said) - words + 1))


# A tagged block of the prompt (`<knowledge>...</knowledge>`, `<diary>`, `<knowledge-3
# type="page">`): what was gathered, which a good answer may quote at length.
_TAGGED_BLOCK = re.compile(r"<([a-z][\w-]*)\b[^>]*>.*?</\1>", re.S)


def instructions_of(prompt: str) -> str:
    """The prompt less its tagged blocks of gathered material: the instructions, which
    an answer never has a reason to repeat (seen from a small local model in Beast
    Mode: "search: run up to 5 web queries at once. Use short, specific ...")."""
    return _TAGGED_BLOCK.sub(" ", prompt)


def answers_something(answer: str, *, prompt: str = "") -> bool:
    """The answer has content, is no refusal and no copy of `prompt`: it may stand
    unjudged."""
    return has_content(answer) and not is_refusal(answer) and not copies(answer, prompt)
