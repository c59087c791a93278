"""Field types that check what a user may get wrong: an endpoint URL, a host list,
an answer-key site, an answer language. A typo fails at load, with the key named,
not mid-run."""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator

from deepsearch.config.redaction import redact_userinfo


def _http_url(value: str) -> str:
    """A provider endpoint must be http(s)://host…: a typo fails at load, not mid-run."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {redact_userinfo(value)!r}")
    return value.strip()


HttpUrl = Annotated[str, AfterValidator(_http_url)]
_HOST = re.compile(r"(?:[\w-]+\.)+[\w-]+\.?|localhost", re.IGNORECASE)


def _host_names(values: list[str]) -> list[str]:
    """Host lists (`--only-hostnames` …): a typo would silently filter out every result,
    so each entry must be a host name; a pasted URL is reduced to its host."""
    hosts = []
    for value in values:
        host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value.strip(), flags=re.IGNORECASE)
        host = host.split("/", 1)[0]
        if not _HOST.fullmatch(host):
            raise ValueError(f"not a host name (like en.wikipedia.org): {value!r}")
        hosts.append(host.lower())
    return hosts


HostList = Annotated[list[str], AfterValidator(_host_names)]


_ANSWER_KEY_SITE = re.compile(r"(?:[\w-]+\.)+[\w-]+(?:/[\w.~%-]+)*", re.IGNORECASE)


def answer_key_sites(values: list[str]) -> list[str]:
    """`host` or `host/path` (a repository on a code host), without a scheme."""
    sites = []
    for value in values:
        site = re.sub(r"^https?://", "", value.strip(), flags=re.IGNORECASE).rstrip("/")
        if not _ANSWER_KEY_SITE.fullmatch(site):
            raise ValueError(
                f"not a host or host/path (like github.com/openai/simple-evals): {value!r}"
            )
        host, _, path = site.partition("/")
        sites.append(host.lower() + (f"/{path}" if path else ""))
    return sites


AnswerKeySites = Annotated[list[str], AfterValidator(answer_key_sites)]


# ISO 639-1 code -> English name: the languages detection knows (agent/language.py)
# and the codes `agent.language` (--language, serve's language_code) accepts.
LANGUAGE_NAMES = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian",
    "pt": "Portuguese", "nl": "Dutch", "sv": "Swedish", "da": "Danish", "no": "Norwegian",
    "fi": "Finnish", "pl": "Polish", "tr": "Turkish", "cs": "Czech", "ro": "Romanian",
    "hu": "Hungarian", "id": "Indonesian", "vi": "Vietnamese", "ru": "Russian",
    "uk": "Ukrainian", "bg": "Bulgarian", "sr": "Serbian", "ar": "Arabic", "fa": "Persian",
    "ur": "Urdu", "he": "Hebrew", "el": "Greek", "hi": "Hindi", "bn": "Bengali",
    "ta": "Tamil", "te": "Telugu", "th": "Thai", "ka": "Georgian", "hy": "Armenian",
    "ja": "Japanese", "ko": "Korean", "zh": "Chinese",
}  # fmt: skip
# Shaped like a code ("de", "pt-BR", "zh-Hant", "zz-bad"): then it must be a known one.
_CODE_SHAPE = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]{1,8})*", re.IGNORECASE)
# Otherwise a language's name, as prompts name it ("German", "Brazilian Portuguese",
# "Old English", "中文"): words of letters, at least four letters in all, or two in a
# name written in its own (non-Latin) script, where "中文" and "日本語" are whole names.
_NAME_SHAPE = re.compile(r"[^\W\d_]+(?:[ -][^\W\d_]+)*")


def _name_shaped(text: str) -> bool:
    letters = sum(ch.isalpha() for ch in text)
    return bool(_NAME_SHAPE.fullmatch(text)) and (
        letters >= 4 or (letters >= 2 and not text.isascii())
    )


def _language(value: str) -> str:
    """A known ISO 639-1 code (a region after it is fine: "pt-BR") or a language name
    (free-form on purpose: the prompts ask for the answer in that language, so
    "Swahili" works though detection does not know it). A code-shaped typo
    ("zz-bad") or anything that is neither (digits, one letter) is an error."""
    text = value.strip()
    if _CODE_SHAPE.fullmatch(text) and not _three_letter_name(text):
        if text.split("-")[0].lower() in LANGUAGE_NAMES:
            return text
        raise ValueError(f"unknown language code {value!r} (known: {_known()})")
    if _name_shaped(text) or _three_letter_name(text):
        return text
    raise ValueError(f"not a language code or name {value!r} (codes: {_known()})")


def _three_letter_name(text: str) -> bool:
    # "Lao", "Ewe", "Twi" are names written as names are (a capital, then lower case);
    # codes are written "lo", "ee", "tw" or "pt-BR".
    return len(text) == 3 and text[0].isupper() and text[1:].islower()


def _blank_is_unset(value: object) -> object:
    # `--language "$LANG_VAR"` with the variable empty means "not given": detect it.
    return None if isinstance(value, str) and not value.strip() else value


def _known() -> str:
    return ", ".join(sorted(LANGUAGE_NAMES))


Language = Annotated[str, AfterValidator(_language)]
# The optional setting: blank is the same as not given (the question's own language).
OptionalLanguage = Annotated[Language | None, BeforeValidator(_blank_is_unset)]
