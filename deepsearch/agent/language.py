"""Detect the question's language without an LLM call.

Non-Latin scripts decide by themselves (kana -> Japanese, Hangul -> Korean, Han
-> Chinese, Cyrillic -> Russian unless Ukrainian/Bulgarian/Serbian letters show,
Arabic -> Arabic unless Persian/Urdu letters show, ...). Latin-script text is
scored against small stopword profiles plus language-specific letters. Nothing
recognisable falls back to English with low confidence. The `--language`
override is the caller's business (`language_name` turns a code into a name).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from pydantic import BaseModel

from deepsearch.config.values import LANGUAGE_NAMES
from deepsearch.text import HAN, HANGUL, KANA

NAMES = LANGUAGE_NAMES  # the table lives with the configuration that validates codes

# (first, last) code point -> language; checked by share of letters. Kana, Hangul and
# Han are the ranges `deepsearch.text` defines.
_SCRIPTS: list[tuple[int, int, str]] = [
    *((first, last, "ja") for first, last in KANA),
    *((first, last, "ko") for first, last in HANGUL),
    *((first, last, "zh") for first, last in HAN),
    (0x0400, 0x04FF, "ru"),
    (0x0600, 0x06FF, "ar"), (0x0590, 0x05FF, "he"), (0x0370, 0x03FF, "el"),
    (0x0900, 0x097F, "hi"), (0x0980, 0x09FF, "bn"), (0x0B80, 0x0BFF, "ta"),
    (0x0C00, 0x0C7F, "te"), (0x0E00, 0x0E7F, "th"), (0x10A0, 0x10FF, "ka"),
    (0x0530, 0x058F, "hy"),
]  # fmt: skip

_STOPWORDS = {
    "en": "the of and to in is was what who when where which how why are does did for with on by from that this it be an",
    "de": "der die das und ist wer wie was wann wo warum nicht ein eine mit von zu den dem im des auf für sind wurde",
    "fr": "le la les et est qui que quoi quand où comment pourquoi un une des du de en pour dans sur au aux sont été",
    "es": "el la los las y es quién qué cuándo dónde cómo por qué un una de del en para con son fue que se",
    "it": "il lo la gli le e è chi che cosa quando dove come perché un una di del della in per con sono fu",
    "pt": "o a os as e é quem que quando onde como por um uma de do da em para com são foi não",
    "nl": "de het een en is wie wat wanneer waar hoe waarom van in op voor met zijn werd niet",
    "sv": "och är vem vad när var hur varför en ett av i på för med som den det inte",
    "da": "og er hvem hvad hvornår hvor hvordan hvorfor en et af i på for med som den det ikke",
    "no": "og er hvem hva når hvor hvordan hvorfor en et av i på for med som den det ikke",
    "fi": "ja on kuka mikä milloin missä miten miksi ei se että oli ovat kun",
    "pl": "i jest kto co kiedy gdzie jak dlaczego w na z do się nie to że czy",
    "tr": "ve bir bu ne kim nerede nasıl neden için ile mi mı da de olan",
    "cs": "a je kdo co kdy kde jak proč v na z do se není to že",
    "ro": "și este cine ce când unde cum de la în pe cu un o din care",
    "hu": "és a az egy ki mi mikor hol hogyan miért nem van volt hogy",
    "id": "dan yang di ke dari apa siapa kapan dimana bagaimana mengapa adalah untuk dengan ini itu",
    "vi": "và là của có không những người được trong cho này ai gì khi nào đâu",
}
_STOP = {lang: frozenset(words.split()) for lang, words in _STOPWORDS.items()}

# Letters that (nearly) give a Latin-script language away.
_LETTERS = {
    "de": "ßäöü", "fr": "çèêëîœùû", "es": "ñ¿¡", "pt": "ãõ", "it": "ìò",
    "sv": "å", "da": "æø", "no": "æø", "pl": "ąęłżźśćń", "tr": "ışğ", "cs": "řěůť",
    "ro": "ășțş", "hu": "őű", "vi": "đơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ",
}  # fmt: skip

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


class DetectedLanguage(BaseModel):
    code: str  # ISO 639-1
    name: str
    confidence: float  # 0..1, rough


def language_name(code: str) -> str:
    """English name for an ISO 639-1 code (the code itself when unknown)."""
    return NAMES.get(code.lower().split("-")[0], code)


def _script_language(text: str) -> tuple[str, float] | None:
    counts: Counter[str] = Counter()
    letters = 0
    for ch in text:
        if not ch.isalpha():
            continue
        letters += 1
        cp = ord(ch)
        for first, last, lang in _SCRIPTS:
            if first <= cp <= last:
                counts[lang] += 1
                break
    if not letters or not counts:
        return None
    if counts["ja"]:  # kana anywhere means Japanese, even when kanji dominate
        counts["ja"] += counts.pop("zh", 0)
    lang, hits = counts.most_common(1)[0]
    share = hits / letters
    if share < 0.3:
        return None
    if lang == "ru":
        lang = _cyrillic_variant(text)
    elif lang == "ar":
        lang = (
            "ur" if re.search("[ٹڈڑںےۓ]", text) else "fa" if re.search("[پچژگکی]", text) else "ar"
        )
    return lang, min(1.0, 0.5 + share / 2)


def _cyrillic_variant(text: str) -> str:
    lower = text.lower()
    if re.search("[ієїґ]", lower):
        return "uk"
    if re.search("[ђћџљњ]", lower):
        return "sr"
    if re.search("ъ", lower) and not re.search("[ыэё]", lower):
        return "bg"
    return "ru"


def _latin_language(text: str) -> tuple[str, float] | None:
    lower = text.lower()
    tokens = _WORD.findall(lower)
    if not tokens:
        return None
    scores = dict.fromkeys(_STOP, 0.0)
    for lang, stop in _STOP.items():
        # One-letter words ("a", "o", "e", "y") are shared by many languages: half weight.
        scores[lang] += sum(1.0 if len(t) > 1 else 0.5 for t in tokens if t in stop)
    for lang, letters in _LETTERS.items():
        scores[lang] += 1.5 * sum(lower.count(ch) for ch in letters)
    ranked = sorted(scores.items(), key=lambda item: -item[1])  # stable, like most_common
    best, top = ranked[0]
    if top < 1.0:
        return None
    # Ties resolve in favour of the profile order above (en first).
    best = min((lang for lang, s in ranked if s == top), key=list(_STOP).index)
    second = next((s for lang, s in ranked if lang != best), 0.0)
    return best, min(1.0, 0.3 + 0.7 * (top - second) / top)


def detect_language(text: str) -> DetectedLanguage:
    """Best guess for the language `text` is written in."""
    sample = unicodedata.normalize("NFC", text)[:2000]
    found = _script_language(sample) or _latin_language(sample)
    code, confidence = found if found else ("en", 0.1)
    return DetectedLanguage(code=code, name=language_name(code), confidence=round(confidence, 2))


def answer_language(question: str, override: str | None = None) -> str:
    """The language name prompts ask the answer in: `--language` (a code like "de" or a
    name), else detected from the question without an LLM call."""
    if override:
        return language_name(override)
    detected = detect_language(question)
    return detected.name if detected.confidence >= 0.5 else "the same language as the question"
