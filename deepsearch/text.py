"""What a sentence, a number and a CJK character are: one definition each, for everyone.

Plain functions over `str`, standard library only. Users: answer sentences and source
quotes (`agent/citations`), page chunks and evidence (`agent/retrieval`), the lexical
tokenizer, language detection and corpus snippets.

* A **sentence** ends after `. ! ?` followed by whitespace ("3.5" and "e.g.x" end
  nothing) or after a CJK full stop `。 ！ ？`, with or without whitespace (CJK text has
  none between sentences).
* A **number** is a run of digits with `.`/`,` groups; thousands separators do not
  count ("13,527" == "13527", "1,083.5" == "1083.5"), decimals do ("3.11" != "3.12"),
  letters around the digits do not ("Q3" and "3" are both 3), and neither does the
  script of the digits ("２０２３" == "2023").
* A **CJK character** is a Han ideograph or a kana (small and halfwidth forms too) of
  the Basic Multilingual Plane: the scripts written without spaces between words, so
  one character carries about a word's worth. Hangul is written with spaces and is
  not one; `HANGUL` names its ranges for language detection.
* **Content** is a letter or a digit of any script (Latin, Cyrillic, Han, kana,
  Hangul, ...) outside JSON's own syntax: `},`, `...`, `null`, `{"answer": ""}` and
  markdown emphasis alone say nothing; `42`, `Paris` and `東京` do.

URL identity lives with the other URL rules in `deepsearch.web.urls`.
"""

from __future__ import annotations

import re
import unicodedata

# (first, last) code points, inclusive.
HAN = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
KANA = ((0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF65, 0xFF9F))  # + small, halfwidth
HANGUL = ((0xAC00, 0xD7AF), (0x1100, 0x11FF))

# The longest question taken, whichever way it comes in (a CLI argument or stdin,
# serve, mcp, the library): a question, not a corpus.
MAX_QUESTION_CHARS = 100_000
LATIN_STOPS = ".!?"
CJK_STOPS = "。！？"


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\u{first:04x}-\\u{last:04x}" for first, last in ranges)


# The inside of a regex character class: `[{CJK_RANGES}]` and `[^{CJK_RANGES}]`.
CJK_RANGES = _char_class(KANA + HAN)
_CJK = re.compile(f"[{CJK_RANGES}]")
_SENTENCE_BREAK = re.compile(
    rf"(?<=[{re.escape(LATIN_STOPS)}])\s+(?=\S)|(?<=[{CJK_STOPS}])\s*(?=\S)"
)
# "13,527" and "13527" are one number; "3.5" keeps its decimals.
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# JSON's syntax words: an object key (`"answer":`) and the bare literals.
_JSON_KEY = re.compile(r'"[^"\n]{0,80}"\s*:')
_JSON_LITERAL = re.compile(r"\b(?:null|true|false|none|undefined)\b", re.IGNORECASE)


def is_cjk(char: str) -> bool:
    """`char` is one CJK character (Han or kana, see the module doc)."""
    return len(char) == 1 and _CJK.match(char) is not None


def cjk_count(text: str) -> int:
    return len(_CJK.findall(text))


def sentence_breaks(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(end of a sentence, start of the next) for every sentence end in text[start:end];
    the whitespace between them (possibly none after a CJK stop) belongs to neither."""
    stop = len(text) if end is None else end
    return [(m.start(), m.end()) for m in _SENTENCE_BREAK.finditer(text, start, stop)]


def ends_sentence(text: str) -> bool:
    """`text` (right-stripped) ends with a sentence stop."""
    return text.rstrip().endswith(tuple(LATIN_STOPS + CJK_STOPS))


def numbers_in(text: str) -> set[str]:
    """The numbers `text` states, thousands separators removed (see the module doc)."""
    out = set()
    for found in _NUMBER.findall(text):
        token = "".join(ch if ch in ".," else str(unicodedata.decimal(ch)) for ch in found)
        groups = token.split(",")
        if "," in token and "." not in token and all(len(g) == 3 for g in groups[1:]):
            token = token.replace(",", "")
        elif "," in token and "." in token:
            token = token.replace(",", "")  # "1,083.5"
        out.add(token)
    return out


def cut_at_word(text: str, limit: int) -> str:
    """At most `limit` characters, cut at the last space when there is one in the
    second half: a trimmed query, question or answer never ends in half a word. Text
    without spaces (one huge word, or CJK) gets a plain cut."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return text[:cut] if cut > limit // 2 else text[:limit]


def has_content(text: str) -> bool:
    """`text` says something: a letter or digit of any script remains once JSON keys
    and literals are removed (see the module doc). Judged without any model."""
    rest = _JSON_LITERAL.sub(" ", _JSON_KEY.sub(" ", text))
    return any(ch.isalnum() for ch in rest)


def word_count(text: str) -> int:
    """Words as a reader counts them: whitespace-separated runs, and each CJK
    character one more (those scripts put no spaces between words)."""
    return len(text.split()) + cjk_count(text)


def short_count(n: int) -> str:
    """A count as the live view prints it: 12 -> "12", 12_345 -> "12.3k", 1_000_000 ->
    "1M" (budgets and tokens in every message, so they never read `60000` beside `60k`)."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}".rstrip("0").rstrip(".") + "k"
    return f"{n / 1_000_000:.2f}".rstrip("0").rstrip(".") + "M"
